"""W&B Weave calls to span rows: a call as Weave's SDK and service API hand it out.

Weave keeps a trace as calls: `id`, `trace_id` and `parent_id` (UUIDv7), `op_name` (the op's
ref, `weave:///ENTITY/PROJECT/op/NAME:DIGEST`), `display_name`, `started_at`, `ended_at`,
`inputs` (the op's arguments by name), `output` (what it returned, as it is), `exception` (the
SDK's JSON text: `type`, `message`, `traceback`), `attributes` (`weave.kind`: agent, llm,
tool, ...), `summary`. A file holds them as the SDK's `client.get_calls()` gives them
(`[call.to_dict() for call in calls]`, dumped with `default=str`, an array or one a line) or as
the service API's `calls/stream_query` answers (one call a line).

Each call becomes one Phoenix table row (`storage.spans.phoenix`), so the OTel mapping reads it
as it reads OpenInference's spans: `weave.kind` as the span kind (a call of no kind whose output
is a chat completion is a model call); a model call's `messages` and completion (Weave's OpenAI
integration logs the request's arguments and the `ChatCompletion`) as `gen_ai.input.messages`
and `gen_ai.output.messages`; a tool's name, inputs and output as the call; other calls' inputs
and output as `input.value` and `output.value`; a call with an `exception` as a failed span
whose status message is `Type: message`. A call with no parent is the agent's run, its op's
name the agent. Ids as for LangSmith (`storage.spans._runs`). Not read: `summary` (usage,
costs, status counts), other `attributes`, `thread_id` and `turn_id`, the traceback
(docs/import.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from storage.spans._messages import decoded
from storage.spans._runs import run_row, uuid_hex
from storage.spans.langfuse import called_tools

__all__ = ["is_weave_call", "weave_row", "with_weave_tools"]

_KINDS = {"llm": "LLM", "tool": "TOOL", "agent": "AGENT", "embedding": "EMBEDDING"}
"""Weave's op kinds as OpenInference span kinds; other kinds (and none) a chain."""


def is_weave_call(value: object) -> bool:
    """True for a Weave call: an object with an `id`, a `trace_id`, a `started_at` and an
    `op_name` that is text."""
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("op_name"), str)
        and value.keys() >= {"id", "trace_id", "started_at"}
    )


def _op(call: Mapping[str, Any]) -> str | None:
    """A call's name: its `display_name`, else its op's (`weave:///.../op/NAME:DIGEST`)."""
    shown = call.get("display_name")
    if isinstance(shown, str) and shown:
        return shown
    name = str(call.get("op_name"))
    return name.rsplit("/op/", 1)[-1].rsplit(":", 1)[0] if name.startswith("weave:") else name


def _failure(exception: Any) -> str | None:
    """An `exception` as a status message: `Type: message` of the SDK's JSON, or the text as
    it is; None for none."""
    if exception in (None, ""):
        return None
    found = decoded(exception)
    if isinstance(found, Mapping) and found.get("message") not in (None, ""):
        kind = found.get("type")
        return f"{kind}: {found['message']}" if kind not in (None, "") else str(found["message"])
    return exception if isinstance(exception, str) else json.dumps(exception)


def _kind(call: Mapping[str, Any], got: Any) -> str | None:
    """The span kind: the call's `weave.kind`; where it has none, a model call when its output
    is a chat completion (`choices`), a chain at the top, else None (`with_weave_tools`)."""
    attributes = decoded(call.get("attributes"))
    weave = attributes.get("weave") if isinstance(attributes, Mapping) else None
    kind = weave.get("kind") if isinstance(weave, Mapping) else None
    if kind is not None:
        return _KINDS.get(str(kind), "CHAIN")
    if isinstance(got, Mapping) and isinstance(got.get("choices"), list):
        return "LLM"
    return "CHAIN" if call.get("parent_id") is None else None


def with_weave_tools(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of the Weave calls of one file (or one block of its lines), each call of no
    kind under the top one (`@weave.op` without `kind=`, how Weave's quick start traces a tool)
    made the call of a tool when its name is one a model call of its trace asked for, and a
    chain otherwise."""
    asked: dict[Any, set[str]] = {}
    for row in rows:
        if row["span_kind"] == "LLM":
            said = decoded(row.get("attributes.gen_ai.output.messages"))
            asked.setdefault(row["context.trace_id"], set()).update(called_tools(said))
    for row in rows:
        if row["span_kind"] is None:
            tool = row["name"] in asked.get(row["context.trace_id"], ())
            row["span_kind"] = "TOOL" if tool else "CHAIN"
            if tool:
                row["attributes.tool.name"] = row["name"]
    return rows


def weave_row(call: Mapping[str, Any]) -> dict[str, Any]:
    """One Weave call (`is_weave_call`) as a Phoenix table row."""
    given, got = decoded(call.get("inputs")), decoded(call.get("output"))
    name = _op(call)
    return run_row(
        (uuid_hex(call.get("trace_id")), call.get("id"), call.get("parent_id")),
        name,
        (call.get("started_at"), call.get("ended_at")),
        _kind(call, got),
        _failure(call.get("exception")),
        (given, got),
        {"agent.name": name} if call.get("parent_id") is None else None,  # the agent's run
        unwrap=False,  # Weave keeps what an op returned as it is
    )
