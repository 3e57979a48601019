"""How OpenTelemetry spans become ReasoningTrace rows: the OTel import mapping's configuration.

The defaults read what pydantic-ai, the OpenAI Agents SDK and the OpenInference instrumentors
record; every key is documented in docs/import.md ("Importing OpenTelemetry spans"), which also
states the mapping rules the keys feed.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["OtelImportConfig"]

_KEY = re.compile(r"^[A-Za-z0-9_][\w.\-/]*$")


def _attribute_key(value: str | None) -> str | None:
    if value is not None and not _KEY.match(value):
        raise ValueError(
            f"{value!r} is not an attribute key; write the key as the spans carry it, "
            "e.g. tracegrade.task_domain or deployment.environment"
        )
    return value


class OtelImportConfig(BaseModel):
    """The mapping from the spans of one OTel trace (or agent run) to one ReasoningTrace."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    group_by: Literal["trace", "agent"] = "trace"
    """"trace": one trace per OTel trace id. "agent": one trace per top-level agent span
    (gen_ai.operation.name = invoke_agent, or OpenInference kind AGENT) and the spans below it;
    spans under no agent span are dropped (`outside_agent`)."""
    success: Literal["status", "not_error", "ok", "attribute"] = "status"
    """"status": the root span's status: ERROR failed, OK succeeded, and UNSET (what most
    instrumentations leave) recorded no outcome, so success is null (unknown; SPEC 1).
    "not_error": success unless the root span's status is ERROR. "ok": success only when the
    root span's status is OK. "attribute": the boolean attribute `success_attribute` of the
    root span; a trace without it has no outcome (null), one with another value is rejected
    as invalid_success."""
    success_attribute: Annotated[str, Field(min_length=1)] | None = None
    """The root span's attribute holding true or false; required when success = "attribute"."""
    confidence_attribute: str | None = None
    """Root span attribute holding outcome.confidence (a number in [0, 1]); None uses
    default_confidence."""
    default_confidence: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0
    """outcome.confidence of every trace when confidence_attribute is not set."""
    task_domain_attribute: str | None = "tracegrade.task_domain"
    """Span or resource attribute holding metadata.task_domain (the root span's first, then the
    trace's other spans in start order); None: always task_domain."""
    task_domain: Annotated[str, Field(min_length=1)] | None = None
    """metadata.task_domain of traces without the attribute; None is the default profile."""
    agent_id: Annotated[str, Field(min_length=1)] | None = None
    """metadata.agent_id of traces with neither gen_ai.agent.name (or agent.name) nor
    service.name."""
    retry_window: Annotated[int, Field(ge=0)] | None = 3
    """Most calls of other tools allowed between a failed tool span and its retry; "any" (or
    None): no limit."""
    tool_error_pattern: str | None = r"(?i)^\s*error\b"
    """Regular expression searched in the result of a tool span whose status is not ERROR: a
    match makes the call a failed one, as status ERROR does. Frameworks that catch a tool's
    exception (smolagents, LangChain, MCP clients) hand its message back as the result with
    status OK; `import chat` reads tool messages with the same default pattern. None (an
    empty text in TOML): only the status says."""
    final_answer_tools: list[str] = Field(
        default_factory=lambda: ["Finish", "final_answer", "final_output", "submit"]
    )
    """Tools through which an agent gives its answer (smolagents' `final_answer`): the
    arguments of the last such call are the answer (their `final_answer`, `answer`, `result`,
    `output` or `text` field) where the trace's top span holds none; empty: the last model
    text is the answer. The same default as `import chat`'s."""
    retrieval_tool: Annotated[str, Field(min_length=1)] = "retrieval"
    """tool.name of the steps made from retrieval spans (OpenInference RETRIEVER)."""
    open_trace_minutes: Annotated[int, Field(ge=0)] = 60
    """A trace whose last span started or ended within this many minutes of the newest span
    start a scoring run read may go on in a later run's files (an export window or a rotated
    file that ends mid-run, read on the next night): its spans are kept in the database and
    mapped again with its later spans when they arrive. 0: no span is kept."""
    open_trace_days: Annotated[int, Field(ge=1)] = 3
    """How long the spans a run keeps wait for a later run's files to go on with them: they
    are let go this many days (wall-clock time) after the run that kept them, and a trace that
    goes on is kept again with its later spans."""
    output_summary_chars: Annotated[int, Field(ge=0)] = 2000
    """Longest steps[].output_summary kept (a tool's result or an error message), in characters;
    longer results are cut with "…" at the end."""

    @field_validator("success_attribute", "confidence_attribute", "task_domain_attribute")
    @classmethod
    def _is_key(cls, value: str | None) -> str | None:
        return _attribute_key(value)

    @field_validator("retry_window", mode="before")
    @classmethod
    def _any_window(cls, value: object) -> object:
        return None if value == "any" else value

    @field_validator("tool_error_pattern", mode="before")
    @classmethod
    def _is_rust_pattern(cls, value: object) -> object:
        if value in ("", None):
            return None
        try:  # the mapping searches with Polars (Rust's regex: no look-around, no backreference)
            pl.Series([""]).str.contains(str(value))
        except pl.exceptions.PolarsError as exc:
            raise ValueError(f"not a regular expression Polars can search ({exc})") from None
        return value

    @model_validator(mode="after")
    def _attribute_rule(self) -> OtelImportConfig:
        if self.success == "attribute" and self.success_attribute is None:
            raise ValueError(
                'success = "attribute" needs success_attribute, the root span attribute that '
                'holds true or false (e.g. success_attribute = "eval.passed")'
            )
        return self

    def attribute_keys(self) -> tuple[str, ...]:
        """The configured attribute keys the readers must keep."""
        keys = (self.success_attribute, self.confidence_attribute, self.task_domain_attribute)
        return tuple(key for key in keys if key is not None)
