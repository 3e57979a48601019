"""SWE-agent trajectories (`.traj`, one JSON document per run) as chat trajectories, mapped by
the chat mapping with the keys of `SWE_AGENT_KEYS` (docs/formats.md).

A trajectory holds `history` (the messages the model saw: the system prompt, in-context
demonstrations, the task, then its turns) and `trajectory` (one entry per turn: `thought`,
`action`, `observation`), and `info` (`submission`, the patch, and `exit_status`). The
demonstrations are examples placed before the task, marked `is_demo` (SWE-agent 0.x) or
`message_type` "demonstration" (1.x): they are never the objective. The objective is the
first user message after them; each turn is a thought and a tool call (the action's command,
its first word the tool) whose result is the observation; the submission is the answer.
SWE-agent records no success: the outcome is unknown (SPEC 1), as is the agent's name. The
turns are read from `trajectory` in both of SWE-agent's action styles (text actions, and
function calls whose `history` tool messages answer `tool_call_ids`, a list): there each
action is the command the call ran.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["SWE_AGENT_KEYS", "is_swe_agent", "swe_agent_record"]

SWE_AGENT_KEYS: dict[str, Any] = {
    "messages_field": "messages",
    "success": "solved",
    "id_fields": ["task"],
    "final_answer_tools": [],
}
"""The chat mapping's keys for a record of `swe_agent_record`: the task is its first message
(the objective; content parts are joined by the mapping) and the trace id follows it;
`solved` is never there (SWE-agent records no outcome); the answer is the last assistant
message, the submission (`submit` takes no argument)."""


def is_swe_agent(value: Any) -> bool:
    """A SWE-agent trajectory: a `history` of messages with roles, and its turns or `info`."""
    if not isinstance(value, dict) or not isinstance(value.get("history"), list):
        return False
    first = value["history"][0] if value["history"] else None
    turns = isinstance(value.get("trajectory"), list) or isinstance(value.get("info"), dict)
    return isinstance(first, dict) and "role" in first and turns


def _demonstration(message: dict[str, Any]) -> bool:
    return bool(message.get("is_demo")) or message.get("message_type") == "demonstration"


def _tool(action: str) -> str:
    """The tool of an action: its command's first word (`edit 4:4 ...` is `edit`)."""
    words = action.split()
    return words[0] if words else "action"


def _turns(trajectory: list[Any]) -> list[dict[str, Any]]:
    """Each turn as an assistant message (its thought and one tool call) and the tool's result."""
    messages: list[dict[str, Any]] = []
    for number, turn in enumerate(trajectory):
        if not isinstance(turn, dict):
            messages.append({"role": "assistant", "content": turn})  # the mapping says why
            continue
        action, call_id = turn.get("action"), f"turn-{number}"
        assistant: dict[str, Any] = {"role": "assistant", "content": turn.get("thought")}
        if not isinstance(action, str):
            messages.append(assistant)
            continue
        call = {"name": _tool(action), "arguments": json.dumps({"command": action})}
        assistant["tool_calls"] = [{"id": call_id, "type": "function", "function": call}]
        observation = turn.get("observation")
        messages += [assistant, {"role": "tool", "tool_call_id": call_id, "content": observation}]
    return messages


def swe_agent_record(value: Any) -> Any:
    """The chat record of one trajectory: the task, its turns, the submission as the answer;
    anything else is handed on as it is, for the mapping to reject with its reason."""
    if not is_swe_agent(value):
        return value
    history = [m for m in value["history"] if isinstance(m, dict) and not _demonstration(m)]
    task = next((m.get("content") for m in history if m.get("role") == "user"), None)
    trajectory = value.get("trajectory")
    turns = _turns(trajectory) if isinstance(trajectory, list) else []
    messages = [{"role": "user", "content": task}, *turns]
    info = value.get("info") if isinstance(value.get("info"), dict) else {}
    submission = info.get("submission")
    if isinstance(submission, str) and submission.strip():
        messages.append({"role": "assistant", "content": submission})
    return {"messages": messages, "task": task}
