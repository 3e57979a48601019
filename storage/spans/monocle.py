"""Monocle's spans (monocle2ai/monocle's `monocle_apptrace`; its default file exporter writes
`.monocle/monocle_trace_*.json`, a JSON array of the SDK's spans) as the attributes the
mapping reads.

Monocle says what a span is in `span.type` and keeps a span's input and output in events,
not attributes: `data.input` (`input`, or `query`) and `data.output` (`response`, or
`output`). A tool's or agent's name is an entity's: `entity.N.name` beside an
`entity.N.type` of `tool.*` or `agent.*`. `monocle_attributes` gives them as the
OpenInference and GenAI keys (`openinference.span.kind`, `input.value`, `output.value`,
`tool.name`, `gen_ai.agent.name`, a model call's `gen_ai.input.messages` and
`gen_ai.output.messages`); a key the span sets itself is kept.

A model call's messages are one JSON object a message keyed by its role (LangChain's
`{"human": ...}`, `{"ai": ...}`; Gemini's `model`), its content a text or a list of parts; a
reply that asks for a tool (`{"ai": {"name": ...}}`, `{"assistant": null}`, Bedrock's
`tool_use` written by Python) holds no text. Microsoft Agent Framework's are written as Python's `repr` and are not read:
its agent spans give the objective. Not steps: the provider's own call inside a framework's
(`inference.modelapi`, events only on an exception), the MCP request inside a tool's call
(`agentic.mcp.invocation`), a hand-off (`agentic.delegation`) and `generic` spans.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from storage.spans._messages import message_list

__all__ = ["monocle_attributes", "with_request_data"]

_KINDS = {
    "workflow": "CHAIN",
    "agentic.turn": "CHAIN",
    "agentic.request": "CHAIN",  # agentic.turn's name before monocle_apptrace 0.6
    "agentic.invocation": "AGENT",
    "agentic.tool.invocation": "TOOL",
    "inference": "LLM",
    "inference.framework": "LLM",
    "inference.modelapi": "LLM",
    "retrieval": "RETRIEVER",
}
"""`span.type` as the OpenInference kind; any other type names no kind."""

_ROLES = {"human": "user", "ai": "assistant", "model": "assistant"}
"""LangChain's message types and Gemini's `model` as roles (`system`, `user`, `assistant`,
`tool` as they are)."""

_TOOL_USE = "'type': 'tool_use'"
"""Anthropic's request for a tool as Python writes it (`{'toolUseId': ..., 'type':
'tool_use'}`): what Monocle gives as the text of a Bedrock reply that asks for a tool."""


def _events(events: Any) -> dict[str, Mapping[str, Any]]:
    found: dict[str, Mapping[str, Any]] = {}
    for event in events if isinstance(events, list) else []:
        if isinstance(event, Mapping) and isinstance(event.get("attributes"), Mapping):
            found.setdefault(str(event.get("name")), event["attributes"])
    return found


def _is_monocle(attributes: Mapping[str, Any], data: Mapping[str, Any]) -> bool:
    """A span Monocle recorded: a `span.type` of its own, with its version or its data events."""
    if attributes.get("span.type") not in (*_KINDS, "generic", "agentic.mcp.invocation"):
        return False
    return "monocle_apptrace.version" in attributes or bool(
        {"data.input", "data.output"} & set(data)
    )


def _text(value: Any) -> str | None:
    """An event attribute as text: a text as it is, a list of one text as that text, any other
    list as JSON. A text that is a JSON list of texts is that list (monocle_apptrace 0.8
    writes an agent's input so: `["What is the weather in Paris?"]`)."""
    if isinstance(value, str) and value.startswith("[") and value.endswith("]"):
        try:
            found = json.loads(value)
        except ValueError:
            found = None
        if isinstance(found, list) and found and all(isinstance(v, str) for v in found):
            value = found
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        value = value[0]
    if isinstance(value, str):
        return value if value.strip() else None
    if value is None or value == [] or value == {}:
        return None
    return json.dumps(value, ensure_ascii=False)


def _entity(attributes: Mapping[str, Any], prefix: str) -> str | None:
    """The name of the first entity whose type starts with `prefix`."""
    for index in range(1, 10):
        kind = attributes.get(f"entity.{index}.type")
        name = attributes.get(f"entity.{index}.name")
        if isinstance(kind, str) and kind.startswith(prefix) and isinstance(name, str) and name:
            return name
    return None


def _said(content: Any) -> bool:
    """A message's content says something: text, not Bedrock's `tool_use` as Python writes it."""
    if not isinstance(content, str) or not content:
        return False
    return not (content.startswith("{'") and _TOOL_USE in content)


def _message(text: Any) -> dict[str, Any] | None:
    """One of a model call's messages (`{"human": "..."}`) as a role and its content."""
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    if not isinstance(value, dict) or len(value) != 1:
        return None
    ((key, content),) = value.items()
    role = str(key)
    return {"role": _ROLES.get(role, role), "content": content}


def _messages(value: Any, role: str | None = None) -> str | None:
    """A model call's messages that say something, as a GenAI messages list (JSON text), their
    content parts joined as `message_list` joins every export's; None where one of them is not
    a message, or none says something (as `role`, where given)."""
    items = value if isinstance(value, list) else [value]
    found = [_message(item) for item in items]
    if not found or any(message is None for message in found):
        return None
    messages = message_list(found) or []
    kept = [m for m in messages if _said(m["content"]) and role in (None, m["role"])]
    return json.dumps(kept, ensure_ascii=False) if kept else None


def monocle_attributes(attributes: Mapping[str, Any], events: Any) -> list[tuple[str, str]]:
    """The attributes (key, text) a Monocle span's type, events and entities give; none for
    a span Monocle did not record."""
    data = _events(events)
    if not _is_monocle(attributes, data):
        return []
    span_type = attributes.get("span.type")
    given = data.get("data.input", {})
    got = data.get("data.output", {})
    kind = _KINDS.get(str(span_type))
    if span_type == "inference.modelapi" and not given and not got:
        kind = None
    pairs: list[tuple[str, str]] = []
    if kind is not None:
        pairs.append(("openinference.span.kind", kind))
    asked = given.get("input", given.get("query"))
    said = got.get("response", got.get("output"))
    if kind == "LLM":
        for key, text in (
            ("gen_ai.input.messages", _messages(asked)),
            ("gen_ai.output.messages", _messages(said, role="assistant")),
        ):
            if text is not None:
                pairs.append((key, text))
    else:
        for key, value in (("input.value", asked), ("output.value", said)):
            text = _text(value)
            if text is not None:
                pairs.append((key, text))
    if kind == "TOOL":
        name = _entity(attributes, "tool.")
        if name is not None:
            pairs.append(("tool.name", name))
    if kind in ("AGENT", "CHAIN"):
        agent = _entity(attributes, "agent.")
        if agent is not None:
            pairs.append(("gen_ai.agent.name", agent))
    return pairs


_REQUESTS = ("agentic.turn", "agentic.request")


def with_request_data(rows: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Phoenix rows of one file (`storage.spans.phoenix`), Monocle's top `workflow` span given
    the user's task and the answer its request spans hold (`agentic.turn`: the first one's
    `data.input`, the last one's `data.output`) where it holds no such event itself. It holds
    no input at all, and for some frameworks (CrewAI, Google ADK) no output: the trace's
    objective was then its first model call's prompt (CrewAI's composed task text) and its
    answer that call's raw reply."""
    workflows = {
        (row.get("context.trace_id"), row.get("context.span_id")): at
        for at, row in enumerate(rows)
        if row.get("attributes.span.type") == "workflow"
    }
    requests = sorted(
        (row for row in rows if row.get("attributes.span.type") in _REQUESTS),
        key=lambda row: str(row.get("start_time")),
    )
    added: dict[int, list[dict[str, Any]]] = {}
    for name, ordered in (("data.input", requests), ("data.output", requests[::-1])):
        given: set[int] = set()
        for request in ordered:
            at = workflows.get((request.get("context.trace_id"), request.get("parent_id")))
            event = _events(request.get("events")).get(name)
            if at is None or at in given or event is None:
                continue
            given.add(at)
            if name not in _events(rows[at].get("events")):
                added.setdefault(at, []).append({"name": name, "attributes": event})
    return [
        {**row, "events": [*(row.get("events") or []), *added[at]]} if at in added else row
        for at, row in enumerate(rows)
    ]
