"""GitHub Copilot Chat sessions of VS Code as chat trajectories, mapped by the chat mapping with
`COPILOT_CHAT_KEYS` (docs/formats.md).

VS Code keeps each chat session as JSON (`workspaceStorage/<id>/chatSessions/<session>.json`;
"Chat: Export Chat..." writes the same document): `sessionId`, `creationDate` (Unix
milliseconds), `requesterUsername`, `responderUsername` and `requests`, one a user's turn:
its `message.text`, the `modelId` that answered, the `response` as the chat view shows it
(markdown `value` parts, `toolInvocationSerialized` parts naming each tool by its `toolId`),
and `result.metadata`: the model's rounds (`toolCallRounds`: each its `response` text and the
`toolCalls` it made, `name`, `arguments` as JSON text, `id`) and the calls' results
(`toolCallResults`, by call id: content whose text VS Code keeps as a tree of prompt nodes).

A session is one trace: the first request's text the objective (later requests are the user's
turns, no steps); each round its text a thought and its calls the calls, each answered by its
result's text (the nodes' texts in order); the last round's text the answer; the model the
agent, the session's creation the time, its id the trace's. A request whose metadata keeps no
rounds (an export without them) gives its markdown as the assistant's text and each tool
invocation as a call with no arguments and no result. A canceled request gives what it kept.
Copilot records no outcome: unknown.
"""

from __future__ import annotations

import json
from typing import Any

from transforms._chat_shapes import assistant_reply, epoch_text

__all__ = ["COPILOT_CHAT_KEYS", "copilot_chat_record", "is_copilot_chat"]

COPILOT_CHAT_KEYS: dict[str, Any] = {
    "messages_field": "messages",
    "id_fields": ["session"],
    "agent_id_field": "model",
    "created_at_field": "started",
    "success": "solved",
    "final_answer_tools": [],
}
"""The chat mapping's keys for a record of `copilot_chat_record`: `solved` is never there."""

_NO_TIME = "1970-01-01T00:00:00+00:00"


def is_copilot_chat(value: Any) -> bool:
    """A VS Code chat session: its requests and the two parties' names."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("requests"), list)
        and "requesterUsername" in value
        and "responderUsername" in value
    )


def _node_text(node: Any) -> list[str]:
    """The texts of a prompt node tree, in order."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [text for child in node for text in _node_text(child)]
    if not isinstance(node, dict):
        return []
    texts = [node["text"]] if isinstance(node.get("text"), str) else []
    for key in ("node", "children", "value"):
        if key in node:
            texts += _node_text(node[key])
    return texts


def _result_text(result: Any) -> str:
    content = result.get("content") if isinstance(result, dict) else result
    return "".join(_node_text(content))


def _from_rounds(metadata: dict[str, Any]) -> list[dict[str, Any]] | None:
    rounds = metadata.get("toolCallRounds")
    if not isinstance(rounds, list) or not rounds:
        return None
    results = metadata.get("toolCallResults")
    results = results if isinstance(results, dict) else {}
    said: list[dict[str, Any]] = []
    for round_ in rounds:
        if not isinstance(round_, dict):
            continue
        made = round_.get("toolCalls")
        calls = [c for c in made if isinstance(c, dict)] if isinstance(made, list) else []
        text = round_.get("response")
        said.append(
            assistant_reply(
                text if isinstance(text, str) and text.strip() else None,
                [(c.get("id"), c.get("name"), c.get("arguments")) for c in calls],
            )
        )
        for call in calls:
            ident = call.get("id")
            if isinstance(ident, str) and ident in results:
                content = _result_text(results[ident])
                said.append({"role": "tool", "tool_call_id": ident, "content": content})
    return said


def _from_response(response: Any) -> list[dict[str, Any]]:
    """What the chat view kept: its markdown, and each tool invocation as a call alone."""
    said: list[dict[str, Any]] = []
    text: list[str] = []
    for number, part in enumerate(response if isinstance(response, list) else []):
        if not isinstance(part, dict):
            continue
        if part.get("kind") is None and isinstance(part.get("value"), str):
            text.append(part["value"])
        elif part.get("kind") == "toolInvocationSerialized":
            ident = part.get("toolCallId") or f"invocation-{number}"
            said.append(assistant_reply("".join(text) or None, [(ident, part.get("toolId"), None)]))
            text = []
    if text or not said:
        said.append(assistant_reply("".join(text), []))
    return said


def _turn(request: dict[str, Any]) -> list[dict[str, Any]]:
    message = request.get("message")
    text = message.get("text") if isinstance(message, dict) else None
    result = request.get("result")
    metadata = result.get("metadata") if isinstance(result, dict) else None
    rounds = _from_rounds(metadata) if isinstance(metadata, dict) else None
    said = rounds if rounds is not None else _from_response(request.get("response"))
    return [{"role": "user", "content": text}, *said]


def copilot_chat_record(value: Any) -> Any:
    """The chat record of one session; anything else as it is, for the mapping to reject
    with its reason."""
    if not is_copilot_chat(value):
        return value
    requests = [r for r in value["requests"] if isinstance(r, dict)]
    models = [r.get("modelId") for r in requests if isinstance(r.get("modelId"), str)]
    record: dict[str, Any] = {
        "messages": [said for request in requests for said in _turn(request)],
        "session": value.get("sessionId")
        or json.dumps(value.get("requests"), sort_keys=True, default=str),
        "started": epoch_text(value.get("creationDate"), 1000) or _NO_TIME,
    }
    if models:
        record["model"] = models[-1]
    return record
