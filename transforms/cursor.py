"""Cursor's agent transcripts (`~/.cursor/projects/<project>/agent-transcripts/<id>/<id>.jsonl`)
as chat trajectories, mapped by the chat mapping with `CURSOR_KEYS` (docs/formats.md).

A transcript holds one message a line, `{role, message: {content: [...]}}`, its content
Anthropic's blocks: `text` (the user's query inside `<user_query>` tags; the model's reasoning
Cursor keeps as `[REDACTED]`) and the assistant's `tool_use` (`name`, `input`). Cursor keeps
neither the tools' results nor the calls' ids.

A transcript is one trace: the first query (without its tags) the objective, later queries the
user's turns (no steps); the assistant's text a thought (not what Cursor redacted), the last
one the answer; each `tool_use` a call with its input and no result. The transcript keeps no
time (1970-01-01), no model and no id: its content names it. Cursor records no outcome:
unknown.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

__all__ = ["CURSOR_KEYS", "cursor_records", "is_cursor_message"]

CURSOR_KEYS: dict[str, Any] = {
    "messages_field": "messages",
    "id_fields": ["transcript"],
    "created_at_field": "started",
    "success": "solved",
    "final_answer_tools": [],
}
"""The chat mapping's keys for a record of `cursor_records`: `solved` is never there."""

_NO_TIME = "1970-01-01T00:00:00+00:00"
_QUERY = re.compile(r"<user_query>\s*(.*?)\s*</user_query>", re.DOTALL)
_REDACTED = "[REDACTED]"


def is_cursor_message(value: Any) -> bool:
    """One line of a Cursor transcript: a role and a message of content blocks, nothing more."""
    return (
        isinstance(value, dict)
        and set(value) == {"role", "message"}
        and value.get("role") in ("user", "assistant")
        and isinstance(value.get("message"), dict)
        and isinstance(value["message"].get("content"), list | str)
    )


def _blocks(content: list[Any] | str) -> list[Any]:
    """A message's content blocks (a text given as a string is one)."""
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _texts(blocks: list[Any]) -> list[str]:
    return [
        b["text"]
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]


def _said(number: int, line: Any) -> dict[str, Any] | Any:
    if not is_cursor_message(line):
        return line  # the mapping says why
    blocks = _blocks(line["message"]["content"])
    text = "\n".join(_texts(blocks))
    if line["role"] == "user":
        query = _QUERY.search(text)
        return {"role": "user", "content": query.group(1) if query else text}
    kept = text.replace(_REDACTED, "").strip()
    uses = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
    said: dict[str, Any] = {"role": "assistant", "content": kept or None}
    if uses:
        said["tool_calls"] = [
            {
                "id": f"line-{number}-{at}",
                "type": "function",
                "function": {"name": use.get("name"), "arguments": use.get("input")},
            }
            for at, use in enumerate(uses)
        ]
    return said


def cursor_records(lines: list[Any]) -> list[tuple[Any, dict[str, Any]]]:
    """A transcript's one trajectory, with its first line (a file is one transcript)."""
    if not lines:
        return []
    content = json.dumps(lines, sort_keys=True, ensure_ascii=False, default=str)
    record = {
        "messages": [_said(number, line) for number, line in enumerate(lines)],
        "transcript": hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest(),
        "started": _NO_TIME,
    }
    return [(lines[0], record)]
