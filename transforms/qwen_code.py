"""Qwen Code session logs (the JSON lines Alibaba's Qwen Code, a fork of Gemini CLI, writes to
`~/.qwen/projects/<project>/chats/<session id>.jsonl`) as chat trajectories, mapped by the chat
mapping with `QWEN_CODE_KEYS` (docs/formats.md).

Each line is an event with a `uuid`, its `parentUuid`, the `sessionId`, a `timestamp`, the
CLI's `version` and `cwd`, and a `type`: `user` (the prompt, `message.parts` as Gemini parts),
`assistant` (the model's `message.parts`: `text`, `thought` text, `functionCall`; its `model`),
`tool_result` (the `functionResponse` parts sent back, and `toolCallResult` with the call's
`status`) and `system` (the CLI's own: telemetry, snapshots). The trajectory:
- one a session, in the order the file holds its events;
- the user's prompts are the user's, the first the objective (parts marked `thought` are not);
- an assistant event's text parts are the assistant's, the last its answer; each
  `functionCall` a call (its `args` as JSON); a `tool_result` the observation of the call it
  answers (`response_text`: `output`, else `error`), a failed call where `toolCallResult`'s
  `status` is not success;
- `system` events, thoughts and usage are not read; the first assistant event's `model` is the
  agent.
A session records no outcome: unknown (SPEC 1).
"""

from __future__ import annotations

from typing import Any

from transforms._chat_shapes import assistant_reply, log_keys
from transforms.gemini_cli import function_calls, response_text, spoken_text

__all__ = ["QWEN_CODE_KEYS", "is_qwen_code_event", "qwen_code_records"]

QWEN_CODE_KEYS = log_keys("session")
"""The chat mapping's keys for a record of `qwen_code_records` (no success field: unknown)."""

_TYPES = frozenset({"user", "assistant", "tool_result", "system"})


def is_qwen_code_event(value: Any) -> bool:
    """One line of a Qwen Code session: an event of a session (its `type`, `sessionId` and
    `uuid`) that holds Gemini parts (`message.parts`) or the CLI's `systemPayload`; a Claude
    Code event holds `message.content` instead."""
    if not isinstance(value, dict) or not isinstance(value.get("sessionId"), str):
        return False
    if not isinstance(value.get("type"), str) or value["type"] not in _TYPES:
        return False
    message = value.get("message")
    parts = message.get("parts") if isinstance(message, dict) else None
    return isinstance(value.get("uuid"), str) and (
        isinstance(parts, list) or "systemPayload" in value
    )


def _parts(event: dict[str, Any]) -> list[dict[str, Any]]:
    message = event.get("message")
    parts = message.get("parts") if isinstance(message, dict) else None
    return [part for part in parts if isinstance(part, dict)] if isinstance(parts, list) else []


def _said(event: dict[str, Any]) -> list[dict[str, Any]]:
    """An event as chat messages (none for one that is no step)."""
    parts = _parts(event)
    kind = event["type"]
    if kind == "user":
        text = spoken_text(parts)
        return [{"role": "user", "content": text}] if text.strip() else []
    if kind == "assistant":
        calls = [p["functionCall"] for p in parts if isinstance(p.get("functionCall"), dict)]
        text = spoken_text(parts)
        return [assistant_reply(text, function_calls(calls))] if text.strip() or calls else []
    if kind == "tool_result":
        status = event.get("toolCallResult")
        status = status if isinstance(status, dict) else {}
        answer: dict[str, Any] = next(
            (p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)),
            {},
        )
        result: dict[str, Any] = {
            "role": "tool",
            "tool_call_id": status.get("callId") or answer.get("id"),
            "content": response_text(parts) or "",
        }
        if status.get("status") not in (None, "success"):
            result["is_error"] = True
        return [result]
    return []


def qwen_code_records(events: list[Any]) -> list[tuple[Any, dict[str, Any]]]:
    """The session log's events (`is_qwen_code_event`) as chat records, one a session, each
    with its first event; a session with no conversation is left out."""
    sessions: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        if is_qwen_code_event(event):
            sessions.setdefault(event["sessionId"], []).append(event)
    records = []
    for key, found in sessions.items():
        messages = [said for event in found for said in _said(event)]
        if not messages:
            continue
        models = (e.get("model") for e in found if e["type"] == "assistant")
        record = {
            "messages": messages,
            "session": key,
            "started": found[0].get("timestamp"),
            "model": next((m for m in models if isinstance(m, str) and m), None),
        }
        records.append((found[0], record))
    return records
