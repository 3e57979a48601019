"""mini-swe-agent trajectories (`<instance>.traj.json`, one JSON document per run) as chat
trajectories, mapped by the chat mapping with `MINI_SWE_AGENT_KEYS` (docs/formats.md).

mini-swe-agent (SWE-agent/mini-swe-agent) saves a run as `info` (`exit_status`, `submission`,
the patch, `config` with the model's `model_name`), `messages` (every message the model saw
and said, in order) and `trajectory_format` (`mini-swe-agent-1`, `-1.1`); a benchmark run adds
its `instance_id`. The messages are the system prompt, the task (the first user message), then
turns: an assistant message whose text holds one shell command in a fenced block (```bash, or
```mswea_bash_command), or, from 2.0, the commands its `extra.actions` list (with a
tool-calling model, as `tool_calls` answered by `tool` messages); then the command's output,
`<returncode>N</returncode>` and `<output>...</output>` (a user message, or the tool message).
A run ends with an `exit` message.

A trajectory is one trace: the task the objective, each command a call of `bash` (its
arguments `{"command": ...}`) with the text around it the thought, its output the result, a
return code other than 0 a failed call; the submission the answer (blank where there is none:
the run gave up or ran out of budget), the model the agent. mini-swe-agent records no
success: the outcome is unknown (SPEC 1). A reply with no fenced command or with more than one ran nothing:
mini-swe-agent executes a reply's command only when it holds exactly one, and otherwise writes
back a format error ("Please always provide EXACTLY ONE action ..., found 2 actions."). Such a
reply's text, its blocks in it, is a thought, its blocks no calls, and the harness's note no
step; the `exit`
message and `extra` (costs, raw responses) are not read.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["MINI_SWE_AGENT_KEYS", "is_mini_swe_agent", "mini_swe_agent_record"]

MINI_SWE_AGENT_KEYS: dict[str, Any] = {
    "messages_field": "messages",
    "success": "solved",
    "id_fields": ["run"],
    "agent_id_field": "model",
    "answer_field": "submission",
    "final_answer_tools": [],
}
"""The chat mapping's keys for a record of `mini_swe_agent_record`: the trace id follows the
run (its instance id, else its task) and the model; `solved` is never there (mini-swe-agent
records no outcome); the answer is the submission, blank where the run submitted nothing."""

_BLOCK = re.compile(r"```(?:bash|mswea_bash_command)[ \t]*\n(.*?)\n?```", re.DOTALL)
_RETURN_CODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_TOOL = "bash"


def is_mini_swe_agent(value: Any) -> bool:
    """A mini-swe-agent trajectory: its `messages` and a `mini-swe-agent` trajectory format."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("messages"), list)
        and str(value.get("trajectory_format", "")).startswith("mini-swe-agent")
    )


def _commands(message: dict[str, Any]) -> tuple[list[str], str | None]:
    """The commands an assistant message ran and its text without them: its `extra.actions`
    where it has them (2.0 on), else its fenced command block when it holds exactly one (the
    harness runs none of two or more)."""
    content = message.get("content")
    text = content if isinstance(content, str) else None
    extra = message.get("extra")
    actions = extra.get("actions") if isinstance(extra, dict) else None
    if isinstance(actions, list) and actions:
        commands = [a["command"] for a in actions if isinstance(a, dict) and "command" in a]
        if text is not None:
            text = _BLOCK.sub("", text).strip()
        return [c if isinstance(c, str) else json.dumps(c) for c in commands], text
    if text is None:
        return [], None
    blocks = _BLOCK.findall(text)
    if len(blocks) != 1:
        return [], text.strip()  # nothing ran: the commands it proposed stay in its text
    return blocks, _BLOCK.sub("", text).strip()


def _result(content: Any, call_id: str) -> dict[str, Any]:
    """A command's output as the tool message answering `call_id`; a return code other than
    0 makes it a failed call."""
    result: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": content}
    code = _RETURN_CODE.search(content) if isinstance(content, str) else None
    if code is not None and int(code.group(1)) != 0:
        result["is_error"] = True
    return result


def _call(call_id: str, command: str) -> dict[str, Any]:
    arguments = json.dumps({"command": command}, ensure_ascii=False)
    return {"id": call_id, "type": "function", "function": {"name": _TOOL, "arguments": arguments}}


def _turns(messages: list[Any]) -> tuple[Any, list[dict[str, Any]]]:
    """The task and the turns after it, as OpenAI messages."""
    task: Any = None
    out: list[dict[str, Any]] = []
    waiting: list[str] = []  # the calls whose output is still to come, in order
    for number, message in enumerate(messages):
        if not isinstance(message, dict):
            out.append({"role": "assistant", "content": message})  # the mapping says why
            continue
        role, content = message.get("role"), message.get("content")
        if role == "assistant" and isinstance(message.get("tool_calls"), list):
            calls = message["tool_calls"]  # a tool-calling model: answered by tool messages
            out.append({"role": "assistant", "content": content, "tool_calls": calls})
        elif role == "assistant":
            commands, text = _commands(message)
            ids = [f"command-{number}-{index}" for index in range(len(commands))]
            turn: dict[str, Any] = {"role": "assistant", "content": text}
            if commands:
                turn["tool_calls"] = [_call(i, c) for i, c in zip(ids, commands, strict=True)]
            out.append(turn)
            waiting = ids
        elif role == "tool":
            out.append(_result(content, str(message.get("tool_call_id"))))
        elif role == "user" and task is None:
            task = content
        elif role == "user" and waiting:
            out.append(_result(content, waiting.pop(0)))
        # the system prompt, the harness's notes on a reply it could not read, and the exit
        # message are no steps
    return task, out


def _model(info: dict[str, Any]) -> Any:
    config = info.get("config")
    model = config.get("model") if isinstance(config, dict) else None
    return model.get("model_name") if isinstance(model, dict) else None


def mini_swe_agent_record(value: Any) -> Any:
    """The chat record of one trajectory: the task, its turns, the submission as the answer;
    anything else is handed on as it is, for the mapping to reject with its reason."""
    if not is_mini_swe_agent(value):
        return value
    task, turns = _turns(value["messages"])
    messages = turns if task is None else [{"role": "user", "content": task}, *turns]
    info = value.get("info") if isinstance(value.get("info"), dict) else {}
    run = value.get("instance_id") or task
    record = {"messages": messages, "run": run, "model": _model(info)}
    submission = info.get("submission")
    # a run that submitted nothing (it gave up, ran out of budget or was cut off) answered
    # nothing: its last thought is no answer
    record["submission"] = submission if isinstance(submission, str) else ""
    return record
