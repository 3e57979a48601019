"""Microsoft AutoGen's own records of a run (0.4 on) as chat trajectories, mapped by the chat
mapping with `AUTOGEN_KEYS` (docs/formats.md).

AgentChat, AutoGen's agents and teams, gives a run's messages as typed objects: `source` (the
agent's name, or `user`), `type` and `content`, from 0.5 a `created_at`. A `TextMessage`
(`StopMessage`, `MultiModalMessage`, a model's `ThoughtEvent`) says something; a
`ToolCallRequestEvent` holds the calls an agent asked for (`id`, `name`, `arguments` as JSON
text), and the `ToolCallExecutionEvent` after it their results (`call_id`, `content`,
`is_error`). They are saved as a `TaskResult` (`messages`, `stop_reason`), as a bare list, or
inside a team's saved state (`team.save_state()`: a `TeamState` whose group chat manager keeps
the `message_thread`). AutoGen Core's model context keeps the model's own messages instead
(`UserMessage`, `AssistantMessage` whose `content` is text or the calls it makes, a
`FunctionExecutionResultMessage` of results; `{"messages": [...]}` as its samples save it).

A run is one trace: the first message the user (source `user`) gave the objective, each other
agent's text (a `StructuredMessage`'s object as JSON) a thought, each call a call answered by
its result (failed where `is_error`), the last response an agent gave the answer (its text, or
a `ToolCallSummaryMessage`: an agent that does not reflect on its calls responds with their
results); a team's agents, when one agent alone spoke, that agent. Not steps: the user's later
messages, a `ToolCallSummaryMessage` (the results again, as text), a `HandoffMessage` (its
call is a step), events of the run's machinery (speaker selection,
streaming chunks, memory queries, code generation and execution events), system messages.
The first message's `created_at` is the trace's time (0.4 keeps none: 1970-01-01); a team's
`team_id`, else the record's content, its id. AutoGen records no outcome: unknown.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from transforms._chat_shapes import assistant_reply

__all__ = ["AUTOGEN_KEYS", "autogen_record", "is_autogen"]

AUTOGEN_KEYS: dict[str, Any] = {
    "messages_field": "messages",
    "id_fields": ["run"],
    "agent_id_field": "agent",
    "created_at_field": "started",
    "answer_field": "answer",
    "success": "solved",
    "final_answer_tools": [],
}
"""The chat mapping's keys for a record of `autogen_record`: `solved` is never there (AutoGen
records no outcome)."""

_SAYS = frozenset(
    {"TextMessage", "StopMessage", "MultiModalMessage", "ThoughtEvent", "StructuredMessage"}
)
_CHAT = _SAYS | {
    "ToolCallRequestEvent",
    "ToolCallExecutionEvent",
    "ToolCallSummaryMessage",
    "HandoffMessage",
    "UserInputRequestedEvent",
    "SelectSpeakerEvent",
    "MemoryQueryEvent",
    "CodeGenerationEvent",
    "CodeExecutionEvent",
    "ModelClientStreamingChunkEvent",
}
"""AgentChat's message and event types (autogen_agentchat.messages)."""
_CORE = frozenset(
    {"UserMessage", "AssistantMessage", "FunctionExecutionResultMessage", "SystemMessage"}
)
"""AutoGen Core's model messages (autogen_core.models)."""
_USER = "user"
_NO_TIME = "1970-01-01T00:00:00+00:00"


def _kind(message: dict[str, Any]) -> str | None:
    """A message's type, with a structured message's model left out
    (`StructuredMessage[Answer]` is a `StructuredMessage`); None where it is no text."""
    kind = message.get("type")
    return kind.split("[", 1)[0] if isinstance(kind, str) else None


def _is_message(value: Any) -> bool:
    if not isinstance(value, dict) or "content" not in value:
        return False
    kind = _kind(value)
    return (kind in _CHAT and "source" in value) or kind in _CORE


def _thread(value: Any) -> list[Any] | None:
    """The messages of a saved run: a bare list, a `TaskResult` or Core's `{"messages"}`, or
    a `TeamState`'s group chat manager's thread; None for anything else."""
    if isinstance(value, list):
        return value if value and _is_message(value[0]) else None
    if not isinstance(value, dict):
        return None
    if value.get("type") == "TeamState" and isinstance(value.get("agent_states"), dict):
        for state in value["agent_states"].values():
            thread = state.get("message_thread") if isinstance(state, dict) else None
            if isinstance(thread, list):
                return thread
        return None
    messages = value.get("messages")
    if isinstance(messages, list) and messages and _is_message(messages[0]):
        return messages
    return None


def is_autogen(value: Any) -> bool:
    """An AutoGen run as AgentChat or Core saves it (a peeked file's first record will do: a
    list's first message, or the document)."""
    return _is_message(value) or _thread(value) is not None


def _text(content: Any) -> str | None:
    """A message's text: a string, the strings of a multimodal list (images left out), or a
    structured message's object as JSON."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part for part in content if isinstance(part, str))
    if isinstance(content, dict):
        return json.dumps(content, ensure_ascii=False)
    return None


def _results(content: Any) -> list[dict[str, Any]]:
    said = []
    for result in content if isinstance(content, list) else [content]:
        answer = result if isinstance(result, dict) else {}
        message = {
            "role": "tool",
            "tool_call_id": answer.get("call_id"),
            "content": answer.get("content") if answer else result,
        }
        if answer.get("is_error") is True:
            message["is_error"] = True
        said.append(message)
    return said


def _calls(content: Any) -> list[tuple[Any, Any, Any]]:
    calls = content if isinstance(content, list) else [content]
    return [
        (c.get("id"), c.get("name"), c.get("arguments")) if isinstance(c, dict) else (None, c, None)
        for c in calls
    ]


def _said(message: Any) -> list[Any]:
    """One AgentChat or Core message as chat messages (none for what is no step)."""
    if not isinstance(message, dict) or _kind(message) is None:
        return [message]  # the mapping says why
    kind, source, content = _kind(message), message.get("source"), message.get("content")
    if kind == "UserMessage" or (kind in _SAYS and source == _USER):
        return [{"role": "user", "content": _text(content)}]
    if kind in _SAYS:
        return [assistant_reply(_text(content), [])]
    if kind == "ToolCallRequestEvent":
        return [assistant_reply(None, _calls(content))]
    if kind in ("ToolCallExecutionEvent", "FunctionExecutionResultMessage"):
        return _results(content)
    if kind == "AssistantMessage":
        if isinstance(content, str):
            return [assistant_reply(content, [])]
        thought = message.get("thought")
        return [assistant_reply(thought if isinstance(thought, str) else None, _calls(content))]
    return []


_ANSWERS = _SAYS | {"ToolCallSummaryMessage", "HandoffMessage"}
"""What an agent gives the team as its response: its text, or the results of the calls it
made as text where it does not reflect on them (AgentChat's default)."""


def _answer(thread: list[Any]) -> str | None:
    """The last response an agent gave (Core: the last assistant text)."""
    for message in reversed(thread):
        if not isinstance(message, dict):
            continue
        kind, source = _kind(message), message.get("source")
        said = kind in _ANSWERS and source != _USER
        if said or (kind == "AssistantMessage" and isinstance(message.get("content"), str)):
            return _text(message.get("content"))
    return None


def _agent(thread: list[Any]) -> str | None:
    """The one agent that spoke in the run; None where several did (a team names none)."""
    agents = {
        m.get("source")
        for m in thread
        if isinstance(m, dict)
        and _kind(m) in (_SAYS | {"ToolCallRequestEvent", "AssistantMessage"})
        and m.get("source") not in (None, _USER)
    }
    (agent,) = agents if len(agents) == 1 else (None,)
    return agent if isinstance(agent, str) and agent else None


def autogen_record(value: Any) -> Any:
    """The chat record of one saved run; anything else is handed on as it is, for the mapping
    to reject with its reason."""
    thread = _thread(value)
    if thread is None:
        return value
    started = next(
        (m["created_at"] for m in thread if isinstance(m, dict) and "created_at" in m), None
    )
    team = value.get("team_id") if isinstance(value, dict) else None
    if not isinstance(team, str) or not team:
        content = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
        team = hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
    record: dict[str, Any] = {
        "messages": [said for message in thread for said in _said(message)],
        "run": team,
        "started": started if isinstance(started, str) else _NO_TIME,
    }
    agent = _agent(thread)
    if agent is not None:
        record["agent"] = agent
    answer = _answer(thread)
    if answer is not None:
        record["answer"] = answer
    return record
