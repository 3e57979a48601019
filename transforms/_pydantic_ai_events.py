"""What pydantic-ai's earlier instrumentation wrote under names of its own: a model call's
messages in one `events` attribute, a tool call's arguments and result.

pydantic-ai before 0.5 (`InstrumentationSettings(event_mode="attributes")`, its default, as
Logfire and Langfuse show it) did not write `gen_ai.input.messages`: each model call's span
has an `events` attribute, the JSON of the GenAI events of that call, each an object with its
`event.name` (`gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message`,
`gen_ai.tool.message`, then `gen_ai.choice`, whose `message` is the reply). Here they become
the two message attributes the mapping reads (`{"role", "content"}` lists, the content as
text): what was sent, and the reply. The agent run's span (`all_messages_events`) is not read:
its `final_result` is the answer.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

__all__ = ["EVENTS_KEY", "PYDANTIC_AI_ARGUMENTS", "PYDANTIC_AI_RESULT", "event_messages"]

EVENTS_KEY = "events"
"""The attribute pydantic-ai's first instrumentation kept a call's GenAI events in."""

PYDANTIC_AI_ARGUMENTS = "tool_arguments"
PYDANTIC_AI_RESULT = "tool_response"
"""A tool call's arguments (JSON) and result (a text as it is, anything else as JSON) on its
`running tool` span, as pydantic-ai wrote them before 1.0 and still does with
`InstrumentationSettings(version=2)`; later versions write `gen_ai.tool.call.arguments` and
`gen_ai.tool.call.result`."""

_SENT = {
    "gen_ai.system.message",
    "gen_ai.user.message",
    "gen_ai.assistant.message",
    "gen_ai.tool.message",
}
_CHOICE = "gen_ai.choice"


def _text(content: Any) -> str:
    """A message's content as text: a string as it is, a list's texts joined by newlines
    (pydantic-ai lists a user prompt's parts; an image or a file there holds no text)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            item if isinstance(item, str) else item.get("text") or item.get("content")
            for item in content
            if isinstance(item, (str, dict))
        ]
        return "\n".join(text for text in texts if isinstance(text, str) and text)
    return ""


def _messages(value: str | None) -> tuple[str | None, str | None]:
    """The input and output messages (JSON text, None for none) of one `events` value; both
    None where it is not a list of GenAI events."""
    try:
        events = json.loads(value) if value else None
    except (ValueError, RecursionError):
        return None, None
    if not isinstance(events, list) or not events:
        return None, None
    if not all(isinstance(event, dict) and "event.name" in event for event in events):
        return None, None
    sent = [
        {"role": str(event.get("role") or ""), "content": _text(event.get("content"))}
        for event in events
        if event["event.name"] in _SENT
    ]
    replies = [event.get("message") for event in events if event["event.name"] == _CHOICE]
    said = [
        {"role": "assistant", "content": _text(reply.get("content"))}
        for reply in replies
        if isinstance(reply, dict)
    ]
    return (
        json.dumps(sent, ensure_ascii=False) if sent else None,
        json.dumps(said, ensure_ascii=False) if said else None,
    )


def event_messages(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with `gen_ai.input.messages` and `gen_ai.output.messages` given from its
    `events` column where the span does not set them itself (Langfuse gives a generation's
    input as messages, not its `gen_ai.choice` reply)."""
    given = frame[EVENTS_KEY]
    wanted = given.is_not_null() & (
        frame["gen_ai.input.messages"].is_null() | frame["gen_ai.output.messages"].is_null()
    )
    if not wanted.any():
        return frame
    pairs = [
        _messages(value) if ask else (None, None) for value, ask in zip(given, wanted, strict=True)
    ]
    sent = pl.Series([pair[0] for pair in pairs], dtype=pl.String)
    said = pl.Series([pair[1] for pair in pairs], dtype=pl.String)
    return frame.with_columns(
        pl.coalesce(pl.col("gen_ai.input.messages"), sent).alias("gen_ai.input.messages"),
        pl.coalesce(pl.col("gen_ai.output.messages"), said).alias("gen_ai.output.messages"),
    )
