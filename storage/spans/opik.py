"""Opik traces to span rows: a trace as Opik's CLI exports it, and spans as its SDK gives them.

`opik export WORKSPACE PROJECT traces` writes a file a trace (`trace_<id>.json`): the trace and
its spans as Opik's REST API gives them (`{"trace": {...}, "spans": [...], "attachments": [...],
"downloaded_at": ..., "project_name": ...}`, each object's `model_dump()` dumped with
`default=str`). A span: `id`, `trace_id` and `parent_span_id` (UUIDs), `type` (general, tool,
llm, guardrail), `name`, `start_time` and `end_time`, `input`, `output`, `metadata`, `model`,
`tags`, `error_info` (`exception_type`, `message`, `traceback`). The SDK's `search_spans`
gives the same spans (`[span.dict() for span in ...]`, an array or one a line).

Each span becomes one Phoenix table row (`storage.spans.phoenix`), so the OTel mapping reads it
as it reads OpenInference's spans: `type` as the span kind; a model call's input and output (the
OpenAI request and completion `track_openai` logs, LangChain's messages and generations
`OpikTracer` logs) as `gen_ai.input.messages` and `gen_ai.output.messages`; a tool span's name
as its tool, its input as the arguments and its output as the result; other spans' input and
output as `input.value` and `output.value`, a value Opik wrapped as `{"output": ...}`
unwrapped; a span with `error_info` as a failed span (`_failure`). A trace's one span with no
parent is its run (`@opik.track`'s outermost function): the trace's name (the agent's), input,
output, tags and error go to it where it says none. Where several spans have no parent (the
nodes of a LangGraph graph under `OpikTracer`, the graph's run being the trace) or none has,
the trace is a span of its own, their parent. Ids as for LangSmith (`storage.spans._runs`).
Not read: feedback scores, usage and costs, metadata, attachments, `thread_id`, the traceback
(docs/import.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storage.spans._messages import decoded
from storage.spans._runs import run_row, uuid_hex
from storage.spans.langfuse import TAGS_KEY, tags_text

__all__ = ["is_opik_span", "is_opik_trace", "opik_rows", "opik_span_row"]

_KINDS = {"general": "CHAIN", "tool": "TOOL", "llm": "LLM", "guardrail": "GUARDRAIL"}
"""Opik span types as OpenInference span kinds."""


def is_opik_span(value: object) -> bool:
    """True for an Opik span: an object with an `id`, a `trace_id`, a `start_time` and an Opik
    span `type` (its `parent_span_id` null or, as the SDK's `.dict()` leaves out what is null,
    absent for a top span)."""
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("type"), str)
        and value["type"] in _KINDS
        and value.keys() >= {"id", "trace_id", "start_time"}
        and "run_type" not in value
    )


def is_opik_trace(value: object) -> bool:
    """True for a trace of Opik's CLI export: `trace` an object with an `id` and a
    `start_time`, and `spans` a list of Opik spans (`is_opik_span`), empty for a trace logged
    with none."""
    if not isinstance(value, Mapping):
        return False
    trace, spans = value.get("trace"), value.get("spans")
    return (
        isinstance(trace, Mapping)
        and trace.keys() >= {"id", "start_time"}
        and isinstance(spans, list)
        and all(map(is_opik_span, spans))
    )


def _failure(error: Any) -> str | None:
    """An `error_info` as a status message: `Type: message`; where it has no message (Opik's
    LangChain callbacks keep LangChain's error text, the exception's repr then its traceback,
    as the traceback, and `Exception` as the type) that text's head; None for no error."""
    if not isinstance(error, Mapping):
        return None
    kind, message = error.get("exception_type"), error.get("message")
    if message not in (None, ""):
        return f"{kind}: {message}" if kind not in (None, "") else str(message)
    head = str(error.get("traceback") or "").split(_TRACEBACK, 1)[0].strip()
    return head or (str(kind) if kind not in (None, "") else None)


_TRACEBACK = "Traceback (most recent call last)"


def opik_span_row(span: Mapping[str, Any], trace_id: Any = None) -> dict[str, Any]:
    """One Opik span (`is_opik_span`) as a Phoenix table row; `trace_id` for a trace's own row,
    which has none of its own. A span with no parent (the agent's run, as `@opik.track` logs
    it) is the agent, named by its name, and has the tags it was called with."""
    top = span.get("parent_span_id") is None
    extra = {"agent.name": span.get("name"), TAGS_KEY: tags_text(span.get("tags"))} if top else {}
    return run_row(
        (uuid_hex(span.get("trace_id") or trace_id), span.get("id"), span.get("parent_span_id")),
        span.get("name"),
        (span.get("start_time"), span.get("end_time")),
        _KINDS.get(str(span.get("type"))),
        _failure(span.get("error_info")),
        (decoded(span.get("input")), decoded(span.get("output"))),
        extra,
    )


def opik_rows(value: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Phoenix rows of a trace of Opik's CLI export (`is_opik_trace`), a row a span. Where
    one span has no parent (`@opik.track`'s outermost function) it is the trace's run: the
    trace's name, input, output, tags and error go to it where it says none. Otherwise (the
    nodes of a LangGraph graph, which `OpikTracer` logs as spans with no parent, the graph's
    run being the trace; a trace logged with no span) the trace is a span of its own, the
    parent of those."""
    trace = value["trace"]
    rows = [opik_span_row(span, trace["id"]) for span in value["spans"]]
    top = [row for row in rows if row["parent_id"] is None]
    own = opik_span_row(_as_span(trace), trace["id"])
    if len(top) == 1:
        root = top[0]
        for key, item in own.items():
            if key.startswith("attributes."):
                root.setdefault(key, item)
            elif key == "status_message" and item is not None and root["status_code"] != "ERROR":
                root.update(status_code="ERROR", status_message=item)
        return rows
    for row in top:
        row["parent_id"] = own["context.span_id"]
        for key in ("attributes.agent.name", f"attributes.{TAGS_KEY}"):
            row.pop(key, None)
    return [own, *rows]


def _as_span(trace: Mapping[str, Any]) -> dict[str, Any]:
    """A trace as the span that is its run: no parent, its own id and type `general`."""
    return {**trace, "trace_id": trace["id"], "type": "general", "parent_span_id": None}
