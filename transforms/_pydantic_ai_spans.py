"""What pydantic-ai's spans say under names of its own, as the names the mapping reads.

- A model call's messages in one `events` attribute: pydantic-ai before 0.5
  (`InstrumentationSettings(event_mode="attributes")`, its default, as Logfire and Langfuse
  show it) did not write `gen_ai.input.messages`; each model call's span has the JSON of the
  GenAI events of that call, each an object with its `event.name` (`gen_ai.system.message`,
  `gen_ai.user.message`, `gen_ai.assistant.message`, `gen_ai.tool.message`, then
  `gen_ai.choice`, whose `message` is the reply). They become the two message attributes
  (`{"role", "content"}` lists, the content as text): what was sent, and the reply. The run
  span's `all_messages_events` is not read: its `final_result` is the answer.
- A tool call's arguments and result in `tool_arguments` and `tool_response` (before 1.0, and
  with `version=2` still), read after `gen_ai.tool.call.arguments` and `.result`.
- An agent run's span that names no operation, only its `agent_name` (before 1.0): an
  `invoke_agent`, so its `final_result` is the run's answer.
- A reply that holds no text but a call of an output tool the model call was offered
  (`model_request_parameters`' `output_tools`: `final_result`, how a structured output is
  given, which no span records): that call's arguments are its text, as
  `transforms.pydantic_ai_messages` reads a history's call of it.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

__all__ = [
    "AGENT_NAME",
    "EVENTS_KEY",
    "PARAMETERS_KEY",
    "PYDANTIC_AI_ARGUMENTS",
    "PYDANTIC_AI_RESULT",
    "pydantic_ai_spans",
]

AGENT_NAME = "agent_name"
"""The attribute pydantic-ai's agent run span names its agent in (before 0.4, alone)."""
_OI_KIND = "openinference.span.kind"
_NONE: frozenset[str] = frozenset()
PARAMETERS_KEY = "model_request_parameters"
"""pydantic-ai's record of what a model call was offered: its function and output tools."""
_OUTPUT = "gen_ai.output.messages"

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


def _output_tools(parameters: str | None) -> frozenset[str]:
    """The names of the output tools a model call was offered: pydantic-ai's own record of the
    request (`model_request_parameters`, `{"function_tools": [...], "output_tools": [{"name":
    "final_result", ...}], ...}`); none where it says none or is not that."""
    try:
        found = json.loads(parameters) if parameters else None
    except (ValueError, RecursionError):
        return frozenset()
    tools = found.get("output_tools") if isinstance(found, dict) else None
    names = [tool.get("name") for tool in tools or [] if isinstance(tool, dict)]
    return frozenset(name for name in names if isinstance(name, str))


def _arguments_text(arguments: object) -> str:
    """A call's arguments as JSON text: given as text, as they are; else written compact, as
    pydantic-ai writes the run's `final_result`."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


def _output_call(reply: dict[str, Any], outputs: frozenset[str]) -> str:
    """The arguments (JSON text) of the output tool (one of `outputs`) an OpenAI-shaped reply
    calls (an events `gen_ai.choice` message's `tool_calls`); "" where it calls none."""
    for call in reply.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and function.get("name") in outputs:
            return _arguments_text(function.get("arguments"))
    return ""


def _output_reply(value: str | None, outputs: frozenset[str]) -> str | None:
    """`gen_ai.output.messages` (JSON text) given a text part holding the arguments of the
    output tool it calls, where it holds no text of its own: the structured output is the
    model's reply (as `transforms.pydantic_ai_messages` reads a history's call of it); None
    where nothing changes."""
    try:
        messages = json.loads(value) if value else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(messages, list):
        return None
    parts = [
        part
        for message in messages
        if isinstance(message, dict) and isinstance(message.get("parts"), list)
        for part in message["parts"]
        if isinstance(part, dict)
    ]
    if any(part.get("type") == "text" and part.get("content") for part in parts):
        return None
    called = [p for p in parts if p.get("type") == "tool_call" and p.get("name") in outputs]
    if not called:
        return None
    text = _arguments_text(called[-1].get("arguments"))
    return json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}])


def _messages(value: str | None, outputs: frozenset[str]) -> tuple[str | None, str | None]:
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
        {
            "role": "assistant",
            "content": _text(reply.get("content")) or _output_call(reply, outputs),
        }
        for reply in replies
        if isinstance(reply, dict)
    ]
    return (
        json.dumps(sent, ensure_ascii=False) if sent else None,
        json.dumps(said, ensure_ascii=False) if said else None,
    )


def pydantic_ai_spans(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` (one row a span, its attributes as columns) with what pydantic-ai's spans say
    under its own names given as the names the mapping reads: an agent run's span that names
    no operation (before 1.0 it has `agent_name` and no `gen_ai.operation.name`) as
    `invoke_agent`, so its `final_result` is the run's answer; a model call's messages in its
    `events` (`event_messages`); and a reply that holds no text but a call of an output tool
    it was offered (`model_request_parameters`: a structured output, which no tool span
    records) as that call's arguments, its text."""
    unnamed = pl.col("gen_ai.operation.name").is_null() & pl.col(_OI_KIND).is_null()
    run = pl.when(pl.col(AGENT_NAME).is_not_null() & unnamed).then(pl.lit("invoke_agent"))
    frame = frame.with_columns(
        pl.coalesce("gen_ai.operation.name", run).alias("gen_ai.operation.name")
    )
    # decoded only where it may matter: output tools offered (most calls are offered none:
    # `"output_tools": []`) to a call whose reply calls a tool or is in its events
    offered = frame.select(
        pl.col(PARAMETERS_KEY).str.contains(r'"output_tools"\s*:\s*\[\s*\{')
        & (
            pl.col(_OUTPUT).str.contains('"tool_call"', literal=True)
            | (pl.col(_OUTPUT).is_null() & pl.col(EVENTS_KEY).is_not_null())
        )
    ).to_series()
    if not offered.any():  # no output tool offered: nothing to read (no Python pass)
        return event_messages(frame, None)
    outputs = [
        _output_tools(text) if ask else _NONE
        for text, ask in zip(frame[PARAMETERS_KEY], offered.fill_null(False), strict=True)
    ]
    frame = event_messages(frame, outputs)
    replies = [  # a reply from events holds no parts: its call was read with them
        _output_reply(text, tools) if tools else None
        for text, tools in zip(frame[_OUTPUT], outputs, strict=True)
    ]
    return frame.with_columns(
        pl.coalesce(pl.Series(replies, dtype=pl.String), pl.col(_OUTPUT)).alias(_OUTPUT)
    )


def event_messages(frame: pl.DataFrame, outputs: list[frozenset[str]] | None) -> pl.DataFrame:
    """`frame` with `gen_ai.input.messages` and `gen_ai.output.messages` given from its
    `events` column where the span does not set them itself (Langfuse gives a generation's
    input as messages, not its `gen_ai.choice` reply); `outputs`: each span's output tools
    (None: none offered to any)."""
    given = frame[EVENTS_KEY]
    wanted = given.is_not_null() & (
        frame["gen_ai.input.messages"].is_null() | frame["gen_ai.output.messages"].is_null()
    )
    if not wanted.any():
        return frame
    offered = outputs if outputs is not None else [_NONE] * len(frame)
    pairs = [
        _messages(value, tools) if ask else (None, None)
        for value, ask, tools in zip(given, wanted, offered, strict=True)
    ]
    sent = pl.Series([pair[0] for pair in pairs], dtype=pl.String)
    said = pl.Series([pair[1] for pair in pairs], dtype=pl.String)
    return frame.with_columns(
        pl.coalesce(pl.col("gen_ai.input.messages"), sent).alias("gen_ai.input.messages"),
        pl.coalesce(pl.col("gen_ai.output.messages"), said).alias("gen_ai.output.messages"),
    )
