"""What the tracing SDKs that keep a trace as runs of their own share (LangSmith, Opik): UUIDs as
OTel ids, a run's return value as the SDK wrapped it, and a LangChain model call's input and
output (LangChain's callbacks hand both SDKs the same values)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from storage.spans._messages import message_fields, text_of

__all__ = ["run_row", "uuid_hex"]


def uuid_hex(value: Any) -> str | None:
    """A UUID (with or without dashes, any case) as 32 lowercase hex digits, else None."""
    text = str(value).strip().lower().replace("-", "") if value is not None else ""
    return text if len(text) == 32 and all(c in "0123456789abcdef" for c in text) else None


def _uuid_span_id(value: Any) -> str | None:
    """A run's UUID as a span id: the first 16 hex digits of the SHA-256 of its hex (a span id
    has 8 bytes, and a UUIDv7's first 8 are its time, shared by runs of one millisecond)."""
    found = uuid_hex(value)
    return None if found is None else hashlib.sha256(found.encode()).hexdigest()[:16]


def _returned(outputs: Any) -> Any:
    """What a run that is no model call returned: its `output` where that is all it holds (how
    LangSmith and Opik wrap a value that is not an object: `{"output": "..."}`, `{"output":
    null}`), and of a LangChain `ToolMessage` its content (its text parts joined where the
    content is a list); other output as it is."""
    if not isinstance(outputs, Mapping) or outputs.keys() != {"output"}:
        return outputs
    found = outputs["output"]
    if not isinstance(found, Mapping) or found.get("type") != "tool" or "content" not in found:
        return found
    content = found["content"]
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, Mapping) and p.get("text")]
        return "\n".join(str(text) for text in texts) if len(texts) == len(content) else content
    return content


def _lc_message(value: Any) -> Any:
    """A message of LangChain's `dumpd` (`{"lc": 1, "type": "constructor", "kwargs": ...}`) as
    its fields (`type` human, ai, tool, system), which `message_list` reads; others as they are."""
    if isinstance(value, Mapping) and value.get("type") == "constructor":
        fields = value.get("kwargs")
        if isinstance(fields, Mapping):
            return dict(fields)
    return value


def _model_input(inputs: Any) -> Any:
    """A model call's input as a message list: the first prompt's messages of `messages`
    (LangChain passes a batch of prompts, one list each); other input as it is."""
    messages = inputs.get("messages") if isinstance(inputs, Mapping) else None
    if isinstance(messages, list) and messages and isinstance(messages[0], list):
        messages = messages[0]
    if isinstance(messages, list):
        return [_lc_message(message) for message in messages]
    return inputs


def _model_output(outputs: Any) -> Any:
    """A model call's output as its messages: each generation's message of the first prompt
    (`generations`); other output as it is."""
    generations = outputs.get("generations") if isinstance(outputs, Mapping) else None
    if isinstance(generations, list) and generations and isinstance(generations[0], list):
        generations = generations[0]
    if isinstance(generations, list) and generations:
        messages = [
            _lc_message(g.get("message")) if isinstance(g, Mapping) else None for g in generations
        ]
        if all(isinstance(message, Mapping) for message in messages):
            return messages
    return outputs


def run_row(
    ids: tuple[str | None, Any, Any],
    name: Any,
    times: tuple[Any, Any],
    kind: str | None,
    failed: str | None,
    said: tuple[Any, Any],
    extra: Mapping[str, Any] | None = None,
    unwrap: bool = True,
) -> dict[str, Any]:
    """A run as a Phoenix table row: `ids` its trace's hex id and its own and its parent's
    UUIDs, `times` its start and end, `failed` its error (None for none), `said` its decoded
    input and output. A model call's (`kind` LLM) as its messages (`_model_input`,
    `_model_output`); another's output unwrapped (`_returned`, where `unwrap`); a tool's name
    its tool; `extra` attributes (the agent, tags) where not None; the input and output as
    `input.value` and `output.value`."""
    trace_id, run_id, parent_id = ids
    given, got = said
    row: dict[str, Any] = {
        "context.trace_id": trace_id,
        "context.span_id": _uuid_span_id(run_id),
        "parent_id": _uuid_span_id(parent_id),
        "name": name,
        "start_time": times[0],
        "end_time": times[1],
        "status_code": "ERROR" if failed else "OK",
        "status_message": failed or None,
        "events": None,
        "span_kind": kind,
    }
    fields: dict[str, Any] = {}
    if kind == "LLM":
        fields.update(message_fields(_model_input(given), _model_output(got)))
    elif unwrap:
        got = _returned(got)
    if kind == "TOOL":
        fields["tool.name"] = name
    fields.update(extra or {})
    fields["input.value"] = text_of(given) if given not in ({}, None) else None
    fields["output.value"] = text_of(got) if got not in ({}, None) else None
    for key, item in fields.items():
        if item is not None:
            row[f"attributes.{key}"] = item
    return row
