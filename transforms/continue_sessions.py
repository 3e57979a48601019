"""Continue's sessions (the Continue IDE extensions' `~/.continue/sessions/<id>.json`, and its CLI
`cn`'s) as chat trajectories, mapped by the chat mapping with `CONTINUE_KEYS`
(docs/formats.md).

A session is `sessionId`, `title`, `workspaceDirectory` and `history`: one item a message,
`message` in OpenAI's shape (`role`, `content`, the assistant's `toolCalls`), the context the
user attached (`contextItems`), and for a message that called tools their states
(`toolCallStates`: `toolCallId`, `status` `done`, `errored` or `canceled`, and `output`, a list
of context items whose `content` is the result).

A session is one trace: the first user message the objective, each assistant message a
thought and its calls, each call answered by its state's output (the items' `content` joined),
failed where the call errored or was canceled, or by the tool message that names it
(`toolCallId`, as older sessions keep results); a call still waiting for approval has no result;
a reasoning model's `thinking` messages are no steps; the last assistant text the answer; the
session's id the trace's. A session keeps no time (1970-01-01) and names no model. Continue
records no outcome: unknown.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CONTINUE_KEYS", "continue_record", "is_continue_session"]

CONTINUE_KEYS: dict[str, Any] = {
    "messages_field": "messages",
    "id_fields": ["session"],
    "created_at_field": "started",
    "success": "solved",
    "final_answer_tools": [],
}
"""The chat mapping's keys for a record of `continue_record`: `solved` is never there."""

_NO_TIME = "1970-01-01T00:00:00+00:00"
_FAILED = frozenset({"errored", "canceled"})
_RAN = _FAILED | {"done"}
"""The states of a call that ran (or was stopped); a call still `generated` or `calling`
(waiting for the user's approval, or cut off) has no result."""


def is_continue_session(value: Any) -> bool:
    """A Continue session: its id and a history of items holding messages."""
    if not isinstance(value, dict) or "sessionId" not in value:
        return False
    history = value.get("history")
    return (
        isinstance(history, list)
        and bool(history)
        and isinstance(history[0], dict)
        and isinstance(history[0].get("message"), dict)
    )


def _results(states: Any, answered: set[str]) -> list[dict[str, Any]]:
    said = []
    for state in states if isinstance(states, list) else []:
        if not isinstance(state, dict) or state.get("status") not in _RAN:
            continue
        if state.get("toolCallId") in answered:
            continue  # the history holds its result as a tool message
        output = state.get("output")
        items = output if isinstance(output, list) else []
        texts = [
            i["content"] for i in items if isinstance(i, dict) and isinstance(i.get("content"), str)
        ]
        result: dict[str, Any] = {
            "role": "tool",
            "tool_call_id": state.get("toolCallId"),
            "content": "\n".join(texts),
        }
        if state.get("status") in _FAILED:
            result["is_error"] = True
        said.append(result)
    return said


def _said(item: Any, answered: set[str]) -> list[Any]:
    message = item.get("message") if isinstance(item, dict) else None
    if not isinstance(message, dict):
        return [item]  # the mapping says why
    if message.get("role") == "thinking":
        return []  # a reasoning model's thinking: not a step, not the answer
    said = {k: v for k, v in message.items() if k not in ("toolCalls", "toolCallId")}
    if isinstance(message.get("toolCalls"), list) and message["toolCalls"]:
        said["tool_calls"] = message["toolCalls"]
    if message.get("role") == "tool":
        said["tool_call_id"] = message.get("toolCallId", message.get("tool_call_id"))
    return [said, *_results(item.get("toolCallStates"), answered)]


def _tool_messages(history: list[Any]) -> set[str]:
    """The calls a session answers with a tool message of its own (older sessions)."""
    return {
        item["message"]["toolCallId"]
        for item in history
        if isinstance(item, dict)
        and isinstance(item.get("message"), dict)
        and item["message"].get("role") == "tool"
        and isinstance(item["message"].get("toolCallId"), str)
    }


def continue_record(value: Any) -> Any:
    """The chat record of one session; anything else as it is, for the mapping to reject
    with its reason."""
    if not is_continue_session(value):
        return value
    answered = _tool_messages(value["history"])
    return {
        "messages": [said for item in value["history"] for said in _said(item, answered)],
        "session": value["sessionId"],
        "started": _NO_TIME,
    }
