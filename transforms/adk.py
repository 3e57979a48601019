"""Google Agent Development Kit (ADK) sessions as chat trajectories, mapped by the chat mapping
with `ADK_KEYS` (docs/formats.md).

A session is what ADK's session service keeps of one conversation with an app, written as
JSON by the `Session` model (`session.model_dump_json()`: snake_case, as google/adk-samples
keeps its example sessions; with its aliases, as `adk web`'s API returns it: camelCase): `id`,
`app_name`, `user_id`, `state`, `last_update_time` and `events`. Each event has an `author`
(`user`, or the agent that wrote it), a `timestamp` (seconds) and, where it says something, a
`content` with Gemini `parts`: `text` (a `thought` part is the model's own reasoning),
`function_call` (`id`, `name`, `args`) and `function_response` (`id`, `name`, `response`: a
tool's returned object, or `{"result": value}` where it returned something else). Events
without content only change the session's state.

The session is one trace: the user's text the user's (the first the objective), an agent's
text a thought (the last the answer), each function call a call with its arguments, each
function response the result of the call it names (by its id; where the session keeps no ids,
as ADK's of early 2025, the earliest unanswered call of its tool) (its `result` where ADK wrapped a value,
else the object as JSON, where a `status` of error or an `error` key marks a failed call for
the levels), the app the agent, the first event's time the trace's. No outcome: unknown.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from transforms._chat_shapes import assistant_reply

__all__ = ["ADK_KEYS", "adk_session_record", "is_adk_session"]

ADK_KEYS: dict[str, Any] = {
    "messages_field": "messages",
    "id_fields": ["session"],
    "agent_id_field": "app",
    "created_at_field": "started",
}
"""The chat mapping's keys for a record of `adk_session_record`: no success field (unknown)."""


def _field(value: dict[str, Any], snake: str, camel: str) -> Any:
    """A field written by the model's name (snake_case) or its alias (camelCase)."""
    return value[snake] if snake in value else value.get(camel)


def is_adk_session(value: Any) -> bool:
    """An ADK session: its `id`, `app_name` (or `appName`), `user_id` (or `userId`) and
    `events`."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("id"), str)
        and isinstance(_field(value, "app_name", "appName"), str)
        and isinstance(_field(value, "user_id", "userId"), str)
        and isinstance(value.get("events"), list)
    )


def _result(response: Any) -> str:
    """A function response's content: the value ADK wrapped as `{"result": value}` (text as it
    is), else the tool's object as JSON."""
    if isinstance(response, dict) and response.keys() == {"result"}:
        response = response["result"]
    if isinstance(response, str):
        return response
    return json.dumps(response, ensure_ascii=False)


@dataclass
class _Calls:
    """The calls made and not yet answered, by tool name: ADK sessions of early 2025 keep no
    call ids, so a response without one answers the earliest open call of its tool."""

    open: dict[Any, deque[str]] = field(default_factory=lambda: defaultdict(deque))
    made: int = 0

    def call(self, call: dict[str, Any]) -> tuple[Any, Any, str]:
        self.made += 1
        ident = call.get("id") or f"adk-call-{self.made}"
        self.open[call.get("name")].append(ident)
        return ident, call.get("name"), json.dumps(call.get("args") or {}, ensure_ascii=False)

    def answer(self, answer: dict[str, Any]) -> dict[str, Any]:
        waiting = self.open[answer.get("name")]
        ident = answer.get("id")
        if isinstance(ident, str) and ident in waiting:
            waiting.remove(ident)
        elif not ident and waiting:
            ident = waiting.popleft()
        return {"role": "tool", "tool_call_id": ident, "content": _result(answer.get("response"))}


def _parts(event: dict[str, Any], snake: str, camel: str) -> list[dict[str, Any]]:
    content = event.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    found = (
        [_field(part, snake, camel) for part in parts if isinstance(part, dict)]
        if isinstance(parts, list)
        else []
    )
    return [value for value in found if isinstance(value, dict)]


def _said(event: dict[str, Any], calls: _Calls) -> list[dict[str, Any]]:
    """An event as chat messages (none for one that only changes the state)."""
    content = event.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    text = "".join(
        str(part["text"])
        for part in (parts if isinstance(parts, list) else [])
        if isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought")
    )
    made = _parts(event, "function_call", "functionCall")
    answers = _parts(event, "function_response", "functionResponse")
    if event.get("author") == "user" and not made and not answers:
        return [{"role": "user", "content": text}] if text.strip() else []
    messages: list[dict[str, Any]] = []
    if text.strip() or made:
        reply = assistant_reply(text if text.strip() else None, [calls.call(c) for c in made])
        messages.append(reply)
    messages.extend(calls.answer(answer) for answer in answers)
    return messages


def _started(events: list[Any]) -> str | None:
    """The first event's time (`timestamp`, seconds) as ISO-8601 text in UTC."""
    for event in events:
        stamp = event.get("timestamp") if isinstance(event, dict) else None
        if isinstance(stamp, int | float) and not isinstance(stamp, bool):
            try:
                return datetime.fromtimestamp(stamp, UTC).isoformat()
            except (ValueError, OverflowError, OSError):
                return None
    return None


def adk_session_record(value: Any) -> Any:
    """An ADK session (`is_adk_session`) as a chat record: its messages, `session` (its id),
    `app` and `started`; anything else as it is."""
    if not is_adk_session(value):
        return value
    events = value["events"]
    messages: list[Any] = []
    calls = _Calls()
    for event in events:
        if isinstance(event, dict):
            messages.extend(_said(event, calls))
        else:
            messages.append(event)  # the mapping says why
    record: dict[str, Any] = {
        "messages": messages,
        "session": value["id"],
        "app": _field(value, "app_name", "appName"),
    }
    started = _started(events)
    if started is not None:
        record["started"] = started
    return record
