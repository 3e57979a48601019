"""A span's GenAI content kept in span events, as the attributes the mapping reads.

Until the GenAI conventions put a call's messages in span attributes (`gen_ai.input.messages`,
`gen_ai.output.messages`), they were events, and frameworks still write them so by default:

- Strands Agents: `gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message`
  and `gen_ai.tool.message` (a `content`: Bedrock's content blocks as JSON, `[{"text": ...}]`,
  `[{"toolUse": ...}]`, `[{"toolResult": ...}]`), then `gen_ai.choice` (its `message`: blocks
  as JSON, or the agent's answer as text). On a tool's span (`execute_tool`) the
  `gen_ai.tool.message` is the call's arguments and the `gen_ai.choice` its result.
- The conventions from 1.37 on, where the messages are not the span's own attributes:
  `gen_ai.client.inference.operation.details` holding `gen_ai.input.messages` or
  `gen_ai.output.messages` (Strands Agents with `OTEL_SEMCONV_STABILITY_OPT_IN=
  gen_ai_latest_experimental`).

`event_attributes` gives them as `gen_ai.input.messages` and `gen_ai.output.messages` (messages
of a role and text content), and a tool's as `gen_ai.tool.call.arguments` and
`gen_ai.tool.call.result`. `span_event_attributes` is what every reader calls: a Monocle span's
events read by `storage.spans.monocle`, any other span's by `event_attributes`, and a key the
span sets itself kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from storage.spans.monocle import monocle_attributes

__all__ = ["EVENT_NAMES", "event_attributes", "span_event_attributes"]

_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_CHOICE = "gen_ai.choice"
_DETAILS = "gen_ai.client.inference.operation.details"
_MESSAGES = ("gen_ai.input.messages", "gen_ai.output.messages")

EVENT_NAMES = frozenset({*_ROLES, _CHOICE, _DETAILS})
"""The span events that hold a call's content."""


def _blocks_text(value: Any) -> str | None:
    """The text of content given as blocks or parts (`[{"text": ...}]`, OpenAI's
    `[{"type": "text", "text": ...}]`), joined by newlines; None where no block holds text (a
    request for a tool, a tool's result block)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        return None
    texts = [
        block["text"]
        for block in value
        if isinstance(block, Mapping) and isinstance(block.get("text"), str) and block["text"]
    ]
    return "\n".join(texts) if texts else None


def _content(text: Any) -> str | None:
    """An event's content as text: JSON blocks as their text, a JSON string as the string, any
    other text as it is."""
    if not isinstance(text, str):
        return None
    if text[:1] in ("[", '"'):
        try:
            return _blocks_text(json.loads(text))
        except ValueError:
            return text
    return text


def _listed(messages: list[dict[str, str]]) -> str | None:
    return json.dumps(messages, ensure_ascii=False) if messages else None


def event_attributes(attributes: Mapping[str, Any], events: Any) -> list[tuple[str, str]]:
    """The attributes (key, text) a span's content events give; none without such events."""
    found: list[tuple[str, Mapping[str, Any]]] = []
    for event in events if isinstance(events, list) else []:
        if isinstance(event, Mapping) and event.get("name") in EVENT_NAMES:
            given = event.get("attributes")
            if isinstance(given, Mapping):
                found.append((str(event["name"]), given))
    if not found:
        return []
    if attributes.get("gen_ai.operation.name") == "execute_tool":
        arguments = next((a.get("content") for n, a in found if n == "gen_ai.tool.message"), None)
        result = next((_content(a.get("message")) for n, a in found if n == _CHOICE), None)
        tool = [("gen_ai.tool.call.arguments", arguments), ("gen_ai.tool.call.result", result)]
        return [(key, text) for key, text in tool if isinstance(text, str)]
    asked = [
        {"role": _ROLES[name], "content": _content(given.get("content")) or ""}
        for name, given in found
        if name in _ROLES
    ]
    said = [
        {"role": "assistant", "content": text}
        for name, given in found
        if name == _CHOICE and (text := _content(given.get("message")))
    ]
    pairs = [
        *((key, given.get(key)) for name, given in found if name == _DETAILS for key in _MESSAGES),
        ("gen_ai.input.messages", _listed(asked)),
        ("gen_ai.output.messages", _listed(said)),
    ]
    kept: dict[str, str] = {}
    for key, text in pairs:
        if isinstance(text, str):
            kept.setdefault(key, text)
    return list(kept.items())


def span_event_attributes(attributes: Mapping[str, Any], events: Any) -> list[tuple[str, str]]:
    """What a span's events say, as attributes (key, text) the span does not set itself: a
    Monocle span's (one with a `span.type`) as `storage.spans.monocle` reads them, any other
    span's content events as `event_attributes` does. `attributes` holds the span's own."""
    if attributes.get("span.type") is not None:
        found = monocle_attributes(attributes, events)
    else:
        found = event_attributes(attributes, events)
    return [(key, text) for key, text in found if key not in attributes]
