"""smolagents' own records of a run as chat trajectories (docs/formats.md).

smolagents (huggingface/smolagents) writes a run's memory as chat messages
(`agent.write_memory_to_messages()`): `system`, `user` (the task, opening "New task:"),
`assistant` (the model's output), `tool-call` (the calls it made, as text: "Calling tools:"
and the calls' Python repr, each `id`, `function.name`, `function.arguments`) and
`tool-response` (a result: "Observation:" or "Error:" and the text, for a code agent opening
"Call id: ..."). A call that failed before smolagents recorded it leaves only its error
("Error executing tool 'python_interpreter' with arguments ..."). Its benchmark harness
(`examples/smolagents_benchmark/run.py`) saves one run a line: `question`, `answer`,
`true_answer`, `model_id`, `agent_action_type`, `start_time` and the messages as
`intermediate_steps`; its open_deep_research example's GAIA runs write the same messages with
`prediction`, `agent_name` and its grading, `is_correct`.

`with_smolagents_roles` writes such messages as OpenAI's, for the chat mapping (any record that
holds them): the task without "New task:", each `tool-call` an assistant's calls, each
`tool-response` the result of the call it names (else the next waiting one), failed where it
opens "Error:"; an error that names a tool no call was recorded for is a failed call of that
tool. A code action that printed and then failed gives its logs, then its error under the
call's id: one result, failed. Parallel calls' results come as one joined observation: the
first call's result. An assistant message that only renders the call that follows ("Tool
call ...: calling 'web_search' with arguments: ...") is no thought. A benchmark line is one trace
(`smolagents_record`): the model the agent, `answer` the answer, `start_time` the time, the
outcome `is_correct` where the line holds it, else unknown (the benchmark harness scores
`answer` against `true_answer` afterwards, outside the file). A run that failed before its
first step holds no message: rejected `empty_trajectory`, not taken for another format.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from datetime import UTC, datetime
from typing import Any

from transforms._chat_shapes import assistant_reply, epoch_text, parts_text

__all__ = [
    "SMOLAGENTS_KEYS",
    "is_smolagents_run",
    "smolagents_record",
    "with_smolagents_roles",
]

SMOLAGENTS_KEYS: dict[str, Any] = {
    "messages_field": "intermediate_steps",
    "id_fields": ["run"],
    "agent_id_field": "model_id",
    "answer_field": "answer",
    "created_at_field": "started",
    "success": "solved",
    "final_answer_tools": ["final_answer"],
}
"""The chat mapping's keys for a record of `smolagents_record`: the trace id follows the
question, the model, the agent's kind and the run's start; `solved` is there only where the
harness graded the run (the GAIA example's `is_correct`)."""

_ROLES = frozenset({"tool-call", "tool-response"})
_TASK = "New task:\n"
_CALLING = "Calling tools:\n"
_CALL_ID = re.compile(r"\ACall id: (\S+)\n")
_RENDERED = re.compile(r"\ATool call \S+: calling '[^']+' with arguments: ", re.DOTALL)
_NAMED = re.compile(r"Error executing tool '([^']+)'")
_NAME = re.compile(r"'name': '([^']+)'")
_OBSERVATION = "Observation:\n"
_ERROR = "Error:\n"
_NO_TIME = "1970-01-01T00:00:00+00:00"


def _clock_text(value: Any) -> str | None:
    """A time written as text ("2025-07-25 03:49:57", the GAIA example's), naive as UTC."""
    if not isinstance(value, str):
        return None
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        return None
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).isoformat()


def is_smolagents_run(value: Any) -> bool:
    """A line of smolagents' benchmark or GAIA output: the question and the run's messages,
    none where the run failed before its first step (a memory's steps, as other harnesses save
    them, are no messages: not this)."""
    if not isinstance(value, dict) or "question" not in value:
        return False
    steps = value.get("intermediate_steps")
    if not isinstance(steps, list):
        return False
    return (not steps and "true_answer" in value) or (
        bool(steps) and isinstance(steps[0], dict) and "role" in steps[0]
    )


def smolagents_record(value: Any) -> Any:
    """A line with its start as ISO text (`started`), its run's key (`run`: the question, the
    model, the agent's kind, the start), and the GAIA example's own names read as the benchmark
    harness's (`prediction` the answer, `agent_name` the model, `is_correct` the outcome as
    `solved`); anything else as it is."""
    if not is_smolagents_run(value):
        return value
    start = value.get("start_time")
    record = {**value, "started": epoch_text(start) or _clock_text(start) or _NO_TIME}
    if "answer" not in record and "prediction" in record:
        record["answer"] = record["prediction"]
    if "model_id" not in record and isinstance(record.get("agent_name"), str):
        record["model_id"] = record["agent_name"]
    if isinstance(value.get("is_correct"), bool):
        record["solved"] = value["is_correct"]
    run = [record.get(key) for key in ("question", "model_id", "agent_action_type")]
    record["run"] = [*run, start]
    return record


def _calls(text: str) -> list[tuple[Any, Any, Any]]:
    """The calls a `tool-call` message's text holds (id, name, arguments)."""
    listed = text.removeprefix(_CALLING)
    try:
        calls = ast.literal_eval(listed)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return [(None, name, None) for name in _NAME.findall(listed)]
    found = []
    for call in calls if isinstance(calls, list) else [calls]:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            found.append((call.get("id"), function.get("name"), function.get("arguments")))
    return found


def with_smolagents_roles(messages: list[Any]) -> list[Any]:
    """`messages` with smolagents' `tool-call` and `tool-response` roles written as OpenAI's
    (above); lists without them are kept as they are."""
    if not any(isinstance(m, dict) and str(m.get("role")) in _ROLES for m in messages):
        return messages
    written: list[Any] = []
    waiting: deque[Any] = deque()
    answered: dict[Any, dict[str, Any]] = {}
    orphans = 0
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        text = parts_text(message.get("content")) if isinstance(message, dict) else ""
        if role == "user":
            written.append({"role": "user", "content": text.removeprefix(_TASK)})
        elif role == "assistant":
            if not _RENDERED.match(text):
                written.append({"role": "assistant", "content": text})
        elif role == "tool-call":
            calls = [
                (call_id if isinstance(call_id, str) else f"call-{len(written)}-{at}", name, args)
                for at, (call_id, name, args) in enumerate(_calls(text))
            ]
            written.append(assistant_reply(None, calls))
            waiting = deque(call_id for call_id, _, _ in calls)
        elif role == "tool-response":
            named = _CALL_ID.match(text)
            body = text[named.end() :] if named else text
            failed = body.startswith(_ERROR)
            if named is not None and named.group(1) in answered:
                # a code action that printed, then failed: smolagents gives its logs, then
                # its error under the call's id; both are the one result, failed
                earlier = answered[named.group(1)]
                earlier["content"] = f"{earlier['content']}\n{body}"
                earlier["is_error"] = earlier.get("is_error", False) or failed
                continue
            if named is not None and named.group(1) in waiting:
                call_id = named.group(1)
                waiting.remove(call_id)
            elif waiting:
                call_id = waiting.popleft()
            elif failed and (tool := _NAMED.search(body)) is not None:
                orphans += 1
                call_id = f"unrecorded-{orphans}"
                written.append(assistant_reply(None, [(call_id, tool.group(1), None)]))
            else:
                continue  # the harness's note on a reply it could not use: no step
            said: dict[str, Any] = {
                "role": "tool",
                "tool_call_id": call_id,
                "content": body.removeprefix(_OBSERVATION),
            }
            if failed:
                said["is_error"] = True
            written.append(said)
            answered[call_id] = said
        else:
            written.append(message)
    return written
