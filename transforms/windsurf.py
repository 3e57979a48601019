"""Windsurf's Cascade transcripts (`~/.windsurf/transcripts/<trajectory>.jsonl`) as chat
trajectories, mapped by the chat mapping with `WINDSURF_KEYS` (docs/formats.md).

A transcript holds one step of a Cascade conversation a line: its `type`, its `status` (`done`,
`error`) and its fields under its type's name. `user_input` (`user_response`) is what the user
said, `planner_response` (`response`) what the model said; every other type is an action
Cascade took: `view_file`, `code_action`, `run_command`, `find`, `grep_search`,
`list_directory`, an MCP server's `list_resources`, and the like, its arguments and its result
in the same fields.

A transcript is one trace: the first user input the objective (later ones are the user's turns,
no steps); each model response a thought, the last one the answer; each action a call of its
type, its result the step's `output`, `content` or `results` (or, where it has none, its
`total_results`), its other fields its arguments; failed where the step's status is `error`, a
command exited with a code other than 0, or the user rejected it. The transcript keeps no time
(1970-01-01), no model and no id: its content names it. Windsurf records no outcome: unknown.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["WINDSURF_KEYS", "is_windsurf_step", "windsurf_records"]

WINDSURF_KEYS: dict[str, Any] = {
    "messages_field": "messages",
    "id_fields": ["transcript"],
    "created_at_field": "started",
    "success": "solved",
    "final_answer_tools": [],
}
"""The chat mapping's keys for a record of `windsurf_record`: `solved` is never there."""

_NO_TIME = "1970-01-01T00:00:00+00:00"
_RESULTS = ("output", "content", "results", "total_results")
"""The fields of an action that hold its result, the first present taken."""


def is_windsurf_step(value: Any) -> bool:
    """One line of a Cascade transcript: a type, its status, and its fields under its name."""
    if not isinstance(value, dict):
        return False
    kind = value.get("type")
    return isinstance(kind, str) and "status" in value and isinstance(value.get(kind), dict)


def _action(number: int, kind: str, step: dict[str, Any], fields: dict[str, Any]) -> list[Any]:
    ident = f"step-{number}"
    found = next((key for key in _RESULTS if key in fields), None)
    arguments = {key: value for key, value in fields.items() if key != found}
    result = fields.get(found) if found else None
    if result is None:
        text = ""  # an action that keeps no result (an edit, a listing): done, or failed
    else:
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    call = {"id": ident, "type": "function", "function": {"name": kind, "arguments": arguments}}
    said: dict[str, Any] = {"role": "tool", "tool_call_id": ident, "content": text}
    code = str(fields.get("exit_code", "0")).strip()
    if (
        step.get("status") == "error"
        or fields.get("user_rejected") is True
        or (code.lstrip("-").isdigit() and int(code) != 0)
    ):
        said["is_error"] = True
    return [{"role": "assistant", "content": None, "tool_calls": [call]}, said]


def windsurf_records(steps: list[Any]) -> list[tuple[Any, dict[str, Any]]]:
    """A transcript's one trajectory, with its first step (a file is one transcript)."""
    return [(steps[0], _record(steps))] if steps else []


def _record(steps: list[Any]) -> dict[str, Any]:
    """The chat record of one transcript's steps, in order."""
    messages: list[Any] = []
    for number, step in enumerate(steps):
        if not is_windsurf_step(step):
            if isinstance(step, dict) and set(step) <= {"type", "status"}:
                continue  # a marker with nothing in it (a checkpoint): no step
            messages.append(step)  # the mapping says why
            continue
        kind, fields = step["type"], step[step["type"]]
        if kind == "user_input":
            messages.append({"role": "user", "content": fields.get("user_response")})
        elif kind == "planner_response":
            messages.append({"role": "assistant", "content": fields.get("response")})
        else:
            messages.extend(_action(number, kind, step, fields))
    content = json.dumps(steps, sort_keys=True, ensure_ascii=False, default=str)
    return {
        "messages": messages,
        "transcript": hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest(),
        "started": _NO_TIME,
    }
