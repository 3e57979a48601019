"""SWE-agent trajectories (`.traj`, one JSON document per run) as chat trajectories, mapped by
the chat mapping with the keys of `SWE_AGENT_KEYS` (docs/formats.md).

A trajectory holds `history` (the messages the model saw: the system prompt, in-context
demonstrations, the task, then its turns) and `trajectory` (one entry per turn: `thought`,
`action`, `observation`), `info` (`submission`, the patch, and `exit_status`) and, in 1.x,
`replay_config` (the run's configuration: its `agent.model.name`). The demonstrations are
examples placed before the task, marked `is_demo` (SWE-agent 0.x) or `message_type`
"demonstration" (1.x): they are never the objective. The objective is the first user message
after them; each turn is a thought and a tool call whose result is the observation; the
submission is the answer (without one the run answered nothing: its last thought is no
answer). A turn's tool is the function the model called where the run used function calling
(1.x: the `history`'s assistant `tool_calls`, taken in order where the call
is the turn's action: same tool, or `bash` running the action as its command), with the
arguments the model gave; else, text actions (0.x), the action's first word, with the action as
its command. SWE-agent records no success: the outcome is unknown (SPEC 1); the model of
`replay_config` is the agent.

The trace id follows the task and the model. A run that names no model (0.x, and harnesses
built on it) is told apart by its own content instead (a digest of its turns and its
submission): runs of several models on one task are several traces, where one id for all of
them kept only the last one read.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["SWE_AGENT_KEYS", "is_swe_agent", "swe_agent_record"]

SWE_AGENT_KEYS: dict[str, Any] = {
    "messages_field": "messages",
    "success": "solved",
    "id_fields": ["run"],
    "agent_id_field": "model",
    "answer_field": "submission",
    "final_answer_tools": [],
}
"""The chat mapping's keys for a record of `swe_agent_record`: the task is its first message
(the objective; content parts are joined by the mapping) and the trace id follows `run` (the
task, and the run's digest where it names no model) and the model;
`solved` is never there (SWE-agent records no outcome); the answer is the submission (`submit`
takes no argument), blank where the run submitted nothing."""


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


def _calls(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The functions the model called, in order (`tool_calls` of the assistant messages)."""
    return [
        call["function"]
        for message in history
        if message.get("role") == "assistant" and isinstance(message.get("tool_calls"), list)
        for call in message["tool_calls"]
        if isinstance(call, dict) and isinstance(call.get("function"), dict)
    ]


def _called(function: dict[str, Any] | None, action: str) -> tuple[str, str] | None:
    """The tool and arguments of a function call that is the turn's `action` (the same tool,
    or `bash` running the action); None for another call."""
    if function is None or not isinstance(function.get("name"), str):
        return None
    arguments = function.get("arguments")
    if isinstance(arguments, dict):
        arguments = json.dumps(arguments)
    if not isinstance(arguments, str):
        return None
    try:
        given = json.loads(arguments)
    except ValueError:
        given = None
    ran = isinstance(given, dict) and given.get("command") == action
    if function["name"] == _tool(action) or ran:
        return function["name"], arguments
    return None


_HARNESS_EXITS = frozenset(
    {
        "exit_api",
        "exit_command_timeout",
        "exit_context",
        "exit_cost",
        "exit_environment_error",
        "exit_error",
        "exit_format",
        "exit_total_execution_time",
    }
)
"""The actions SWE-agent 0.x puts in a run's last turn when it stops the run itself (the cost
or context limit reached, too many malformed replies, an API or environment error), with its
own thought ("Exit due to cost limit") and result ("Exited (autosubmitted)"); 1.x leaves that
turn's action empty and gives the same thought ("Exit due to ...", "Exiting due to forfeit").
No step of the model's; the submission it then makes is the answer."""
_EXIT_THOUGHTS = ("Exit due to ", "Exiting due to ")


def _harness_exit(action: Any, thought: Any) -> bool:
    if not isinstance(action, str):
        return False
    return action in _HARNESS_EXITS or (
        action == "" and isinstance(thought, str) and thought.startswith(_EXIT_THOUGHTS)
    )


_LOOKAHEAD = 3
"""Function calls a turn's own may come after (calls the run asked the model again for, after
a reply it could not parse, have no turn)."""


def _turns(trajectory: list[Any], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each turn as an assistant message (its thought and one tool call) and the tool's
    result; the function calls are taken in order, each by the first turn whose action it is."""
    messages: list[dict[str, Any]] = []
    next_call = 0
    for number, turn in enumerate(trajectory):
        if not isinstance(turn, dict):
            messages.append({"role": "assistant", "content": turn})  # the mapping says why
            continue
        action, call_id = turn.get("action"), f"turn-{number}"
        if _harness_exit(action, turn.get("thought")):
            continue  # the harness ended the run ("Exit due to cost limit"): not the model's
        assistant: dict[str, Any] = {"role": "assistant", "content": turn.get("thought")}
        if not isinstance(action, str):
            messages.append(assistant)
            continue
        called = None
        for at in range(next_call, min(next_call + _LOOKAHEAD, len(calls))):
            called = _called(calls[at], action)
            if called is not None:
                next_call = at + 1
                break
        name, arguments = called or (_tool(action), json.dumps({"command": action}))
        call = {"name": name, "arguments": arguments}
        assistant["tool_calls"] = [{"id": call_id, "type": "function", "function": call}]
        observation = turn.get("observation")
        messages += [assistant, {"role": "tool", "tool_call_id": call_id, "content": observation}]
    return messages


def _model(value: dict[str, Any]) -> str | None:
    """The model of a 1.x run (`replay_config.agent.model.name`; the config as an object or as
    its JSON text)."""
    config = value.get("replay_config")
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except ValueError:
            return None
    agent = config.get("agent") if isinstance(config, dict) else None
    model = agent.get("model") if isinstance(agent, dict) else None
    name = model.get("name") if isinstance(model, dict) else None
    return name if isinstance(name, str) and name else None


def swe_agent_record(value: Any) -> Any:
    """The chat record of one trajectory: the task, its turns, the submission as the answer;
    anything else is handed on as it is, for the mapping to reject with its reason."""
    if not is_swe_agent(value):
        return value
    history = [m for m in value["history"] if isinstance(m, dict) and not _demonstration(m)]
    task = next((m.get("content") for m in history if m.get("role") == "user"), None)
    trajectory = value.get("trajectory")
    turns = _turns(trajectory, _calls(history)) if isinstance(trajectory, list) else []
    record: dict[str, Any] = {"messages": [{"role": "user", "content": task}, *turns], "run": task}
    info = value.get("info") if isinstance(value.get("info"), dict) else {}
    submission = info.get("submission")
    # a run that submitted nothing (it gave up, ran out of budget or was cut off) answered
    # nothing: its last thought is no answer
    record["submission"] = submission if isinstance(submission, str) else ""
    model = _model(value)
    if model is not None:
        record["model"] = model
    elif task is not None:
        record["run"] = [task, _digest(trajectory, submission)]
    return record


def _digest(trajectory: Any, submission: Any) -> str:
    """SHA-256 of a run's turns and submission as JSON (keys sorted): the same run read
    again gives the same digest, another run of the same task another."""
    content = json.dumps([trajectory, submission], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
