"""How chat-message trajectories become ReasoningTrace rows: the import mapping's configuration.

The defaults read the tau-bench results layout (`task_id`, `trial`, `reward`, `traj`); other
logs name their own fields. Every field is documented in docs/import.md, which also states the
mapping rules the fields feed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["ChatImportConfig", "SuccessRule", "parse_success_rule"]

COMPARISONS = ("==", "!=", ">=", "<=", ">", "<")
"""Operators a success expression may use."""

_PATH = r"[A-Za-z0-9_][\w\-]*(?:\.[A-Za-z0-9_][\w\-]*)*"
_EXPRESSION = re.compile(
    rf"^\s*(?P<path>{_PATH})\s*(?:(?P<op>==|!=|>=|<=|>|<)\s*(?P<value>.+?))?\s*$"
)
_FIELD = re.compile(rf"^{_PATH}$")


@dataclass(frozen=True)
class SuccessRule:
    """A parsed success expression: `path` alone (a boolean field) or `path OP literal`."""

    path: str
    op: str | None = None
    value: Any = None

    def __str__(self) -> str:
        if self.op is None:
            return self.path
        return f"{self.path} {self.op} {json.dumps(self.value)}"


@lru_cache(maxsize=64)
def parse_success_rule(text: str) -> SuccessRule:
    """Parse `reward == 1`, `info.passed` or `score >= 0.5` into a SuccessRule.

    Raises:
        ValueError: the text is not `FIELD` or `FIELD OP LITERAL` with a JSON literal.
    """
    match = _EXPRESSION.match(text)
    if match is None:
        raise ValueError(
            f"success expression {text!r} is not FIELD or FIELD OP VALUE; write for example "
            "'reward == 1', 'score >= 0.5' or 'info.passed' (operators: "
            f"{' '.join(COMPARISONS)})"
        )
    if match["op"] is None:
        return SuccessRule(match["path"])
    try:
        value = json.loads(match["value"])
    except json.JSONDecodeError:
        raise ValueError(
            f"success expression {text!r} compares with {match['value']!r}, which is not a JSON "
            'literal; write a number, true, false or a quoted string ("passed")'
        ) from None
    if isinstance(value, dict | list) or value is None:
        raise ValueError(
            f"success expression {text!r} compares with {match['value']}; compare with a "
            "number, true, false or a quoted string"
        )
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if match["op"] not in ("==", "!=") and not number:
        raise ValueError(
            f"success expression {text!r} orders a non-number; {match['op']} needs a number"
        )
    return SuccessRule(match["path"], match["op"], value)


def _field_path(value: str | None) -> str | None:
    if value is not None and not _FIELD.match(value):
        raise ValueError(
            f"{value!r} is not a field path; write keys joined by dots, e.g. info.task.instruction"
        )
    return value


class ChatImportConfig(BaseModel):
    """The mapping from one chat trajectory record to one ReasoningTrace."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    messages_field: str = "traj"
    """Field of the record holding the message list (a record that is itself a list is the
    message list)."""
    objective_field: str | None = None
    """Field holding the objective; None takes the content of the first user message."""
    success: str = "reward == 1"
    """Success expression: a boolean field, or `FIELD OP LITERAL` (==, !=, >=, <=, >, <)."""
    confidence_field: str | None = None
    """Field holding outcome.confidence (a number in [0, 1]); None uses default_confidence."""
    default_confidence: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0
    """Confidence of every trace when confidence_field is not set."""
    created_at_field: str | None = None
    """Field holding an ISO-8601 event time; None uses base_time plus the record's order."""
    base_time: datetime = datetime(1970, 1, 1, tzinfo=UTC)
    """Event time of the first record when created_at_field is not set (naive means UTC)."""
    time_step_seconds: Annotated[float, Field(gt=0.0)] = 1.0
    """Seconds between consecutive records when created_at_field is not set."""
    agent_id: Annotated[str, Field(min_length=1)] | None = None
    """metadata.agent_id of every trace (unless agent_id_field is set)."""
    agent_id_field: str | None = None
    """Field holding the agent id; a record without it falls back to agent_id."""
    task_domain: Annotated[str, Field(min_length=1)] | None = None
    """metadata.task_domain of every trace (unless task_domain_field is set); picks the profile."""
    task_domain_field: str | None = None
    """Field holding the domain; a record without it falls back to task_domain."""
    id_fields: list[str] = Field(default_factory=lambda: ["task_id", "trial"])
    """Fields whose values (with the agent id) determine the trace id; empty: the record's
    content determines it."""
    error_pattern: str = r"(?i)^\s*error\b"
    """Regular expression searched in a tool message's content; a match makes it a tool error."""
    retry_window: Annotated[int, Field(ge=0)] | None = 3
    """Most tool calls of other tools allowed between a failed call and its retry; "any" (or
    None): no limit."""
    final_answer_tools: list[str] = Field(
        default_factory=lambda: ["Finish", "final_answer", "final_output", "submit"]
    )
    """Tools through which an agent gives its answer (ToolBench's `Finish`, smolagents'
    `final_answer`, SWE-agent's `submit`): the argument of the last such call is the trace's
    answer (its `final_answer`, `answer`, `result`, `output` or `text` field); empty: the last
    assistant text is the answer."""

    answer_field: str | None = None
    """Field holding the answer (a harness's submission); where a record has a string there it
    is the answer, else the last final-answer call's, else the last assistant text."""

    @field_validator(
        "messages_field",
        "objective_field",
        "answer_field",
        "confidence_field",
        "created_at_field",
        "agent_id_field",
        "task_domain_field",
    )
    @classmethod
    def _is_path(cls, value: str | None) -> str | None:
        return _field_path(value)

    @field_validator("id_fields")
    @classmethod
    def _are_paths(cls, value: list[str]) -> list[str]:
        for path in value:
            _field_path(path)
        if len(set(value)) != len(value):
            raise ValueError(f"id_fields {value} names a field twice; list each once")
        return value

    @field_validator("retry_window", mode="before")
    @classmethod
    def _any_window(cls, value: object) -> object:
        return None if value == "any" else value

    @field_validator("success")
    @classmethod
    def _is_expression(cls, value: str) -> str:
        parse_success_rule(value)
        return value

    @field_validator("error_pattern")
    @classmethod
    def _is_pattern(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a regular expression ({exc}); fix the pattern") from None
        return value

    @field_validator("base_time")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    @property
    def success_rule(self) -> SuccessRule:
        """The parsed success expression."""
        return parse_success_rule(self.success)

    @property
    def error_regex(self) -> re.Pattern[str]:
        """The compiled error pattern."""
        return re.compile(self.error_pattern)
