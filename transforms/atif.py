"""Agent trajectories in ATIF, the Agent Trajectory Interchange Format (Harbor's RFC 0001, which
Harbor's agents, Terminal-Bench 2 and other tools write as `trajectory.json`), as chat
trajectories, mapped by the chat mapping with `ATIF_KEYS` (docs/formats.md).

A trajectory is `schema_version` (`ATIF-v1.x`), `session_id`, `agent` (`name`, `version`,
`model_name`) and `steps`, each a `step_id`, a `timestamp`, a `source` (`user`, `agent`,
`system`) and a `message` (text, or content parts); an agent step may hold
`reasoning_content`, `tool_calls` (`tool_call_id`, `function_name`, `arguments`) and an
`observation` whose `results` (`source_call_id`, `content`) answer its calls. Some agents write
a call's result as a step of its own, naming the call in its `extra.tool_call_id` (OpenClaw's
adapter), its message the result again.

The trajectory is one trace: the user's messages the user's (the first the objective), an
agent's message a thought (the last the answer), each call a call with its arguments, each
result the result of the call it names (by `source_call_id`, else the step's
`extra.tool_call_id`, else the step's calls in order); a result flagged `isError` (or
`is_error`), or a command's exit code other than 0 in its step's `extra` (`exit_code`,
`exec_exit_code`), a failed call. A result no call asked for (the harness's feedback on a
reply it could not parse) and `reasoning_content` are not read; system steps are not steps.
The agent's model (else its name) is the agent, the first step's time the trace's (without
step times, 1970-01-01, the chat mapping's base time), the session the trace id. A trajectory records no outcome; where it sits in a Harbor trial
(`<trial>/agent/trajectory.json`), the trial's verifier reward is it
(`storage.inputs.atif_files`): 1 succeeded, less failed.
"""

from __future__ import annotations

import json
from typing import Any

from transforms._chat_shapes import assistant_reply, parts_text

__all__ = ["ATIF_KEYS", "atif_record", "is_atif_trajectory"]

ATIF_KEYS: dict[str, Any] = {
    "messages_field": "messages",
    "id_fields": ["session"],
    "agent_id_field": "agent",
    "created_at_field": "started",
    "success": "reward == 1",
    "final_answer_tools": [],
}
"""The chat mapping's keys for a record of `atif_record`: `reward` only where the trial's
verifier gave one."""

_ERROR_FLAGS = ("isError", "is_error")
_NO_TIME = "1970-01-01T00:00:00+00:00"
_EXIT_CODES = ("exit_code", "exec_exit_code")


def is_atif_trajectory(value: Any) -> bool:
    """An ATIF trajectory: `schema_version` `ATIF-...` and its `steps`."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("schema_version"), str)
        and value["schema_version"].upper().startswith("ATIF")
        and isinstance(value.get("steps"), list)
    )


def _text(message: Any) -> str:
    """A step's message: its text, or the text parts of its content parts."""
    return message if isinstance(message, str) else parts_text(message)


def _extra(value: dict[str, Any]) -> dict[str, Any]:
    found = value.get("extra")
    return found if isinstance(found, dict) else {}


def _failed(step: dict[str, Any], result: dict[str, Any]) -> bool:
    extras = (_extra(result), _extra(step))
    flagged = any(extra.get(flag) is True for extra in extras for flag in _ERROR_FLAGS)
    codes = [_extra(step).get(code) for code in _EXIT_CODES]
    exited = any(isinstance(c, int) and not isinstance(c, bool) and c != 0 for c in codes)
    return flagged or exited


def _result(result: dict[str, Any]) -> str:
    """A result's content: text or content parts as `_text` reads a message, anything else
    as JSON."""
    content = result.get("content")
    if content is None or isinstance(content, str | list):
        return _text(content)
    return json.dumps(content, ensure_ascii=False)


def _agent_step(step: dict[str, Any]) -> list[dict[str, Any]]:
    """An agent step as chat messages: its words and calls, then the results it holds."""
    calls = [call for call in step.get("tool_calls") or [] if isinstance(call, dict)]
    observation = step.get("observation")
    results = observation.get("results") if isinstance(observation, dict) else None
    results = [result for result in results or [] if isinstance(result, dict)]
    answering = _extra(step).get("tool_call_id")
    messages: list[dict[str, Any]] = []
    text = _text(step.get("message"))
    if calls or not (results and answering):  # a result's own step repeats it as its message
        made = [
            (
                call.get("tool_call_id"),
                call.get("function_name"),
                json.dumps(call.get("arguments") or {}, ensure_ascii=False),
            )
            for call in calls
        ]
        if text.strip() or made:
            messages.append(assistant_reply(text if text.strip() else None, made))
    for number, result in enumerate(results):
        call_id = result.get("source_call_id") or answering
        if call_id is None and number < len(calls):
            call_id = calls[number].get("tool_call_id")
        if call_id is None:
            continue  # feedback no call asked for
        answer: dict[str, Any] = {
            "role": "tool",
            "tool_call_id": call_id,
            "content": _result(result),
        }
        if _failed(step, result):
            answer["is_error"] = True
        messages.append(answer)
    return messages


def atif_record(value: Any, reward: float | None = None) -> Any:
    """An ATIF trajectory (`is_atif_trajectory`) as a chat record: its messages, `session`,
    `agent`, `started` and, given the trial's verifier reward, `reward`; anything else as it
    is."""
    if not is_atif_trajectory(value):
        return value
    messages: list[Any] = []
    for step in value["steps"]:
        if not isinstance(step, dict):
            messages.append(step)  # the mapping says why
        elif step.get("source") == "user":
            messages.append({"role": "user", "content": _text(step.get("message"))})
        elif step.get("source") == "agent":
            messages.extend(_agent_step(step))
    agent = value.get("agent") if isinstance(value.get("agent"), dict) else {}
    record: dict[str, Any] = {
        "messages": messages,
        "session": value.get("session_id"),
        "agent": agent.get("model_name") or agent.get("name"),
    }
    stamp = next(
        (s["timestamp"] for s in value["steps"] if isinstance(s, dict) and s.get("timestamp")),
        None,
    )
    # without step times (Harbor's own golden trajectories have none), the chat mapping's
    # default base time, as for every format that records none
    record["started"] = stamp if isinstance(stamp, str) else _NO_TIME
    if reward is not None:
        record["reward"] = reward
    return record
