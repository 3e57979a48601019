"""Gemini CLI chat sessions (what Google's Gemini CLI records of each session under
`~/.gemini/tmp/<project>/chats/`) as chat trajectories, mapped by the chat mapping with
`GEMINI_CLI_KEYS` (docs/formats.md).

A session is messages: `id`, `timestamp`, `type` (`user`, `gemini`, or the CLI's own `info`,
`error`, `warning`), `content` (text, or Gemini parts), and on a `gemini` message `toolCalls`
(each with its `id`, `name`, `args`, `result`: the `functionResponse` parts sent back,
`status`: success, error or cancelled), `thoughts`, `tokens` and `model`. Versions up to about
0.2x write a session as one JSON document (`session-<time>-<id>.json`: `sessionId`,
`projectHash`, `startTime`, `lastUpdated`, `messages`); later ones append records to
`session-<time>-<id>.jsonl`: the session's metadata first, then each message as it is written
(a message written again, as when its tool calls complete, replaces the earlier one in place),
`{"$set": {...}}` updates (a `messages` list replacing all of them) and `{"$rewindTo": ID}`
(the conversation rewound: that message and those after it dropped). The session is replayed as
the CLI itself loads it. The trajectory:
- one a file, the session's;
- the user's messages are the user's, the first the objective; what the CLI itself sends in the
  user's name is not read, as the CLI leaves it out when it resumes a session (text that
  starts with `<session_context>`, `<hook_context>`, a slash command's `/` or `?`), nor the
  `functionResponse` parts that carry tool results back (each call holds its own);
- a `gemini` message's text is the assistant's, the last its answer; each tool call a call, its
  `functionResponse`'s `output` (else `error`, else the text shown) the observation, a failed
  call where its status is not success; a message's calls of several rounds (each call's
  `timestamp`: a later round ran after the earlier one's results) each followed by its
  results, in the order they ran;
- `thoughts` and token counts are not read; the first `gemini` message's model is the agent.
A session records no outcome: unknown (SPEC 1).
"""

from __future__ import annotations

import json
from typing import Any

from transforms._chat_shapes import assistant_reply, log_keys, parts_text

__all__ = [
    "GEMINI_CLI_KEYS",
    "function_calls",
    "gemini_cli_records",
    "is_gemini_cli_record",
    "is_gemini_cli_session",
    "response_text",
]

GEMINI_CLI_KEYS = log_keys("session")
"""The chat mapping's keys for a record of `gemini_cli_records` (no success field: unknown)."""

_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})

_IGNORED = ("/", "?", "<session_context>", "<hook_context>")
"""How the user messages start that the CLI leaves out when it resumes a session."""


def is_gemini_cli_session(value: Any) -> bool:
    """A session's metadata (the first record of a session log, or a whole session file):
    its `sessionId` and `projectHash`."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("sessionId"), str)
        and isinstance(value.get("projectHash"), str)
    )


def is_gemini_cli_record(value: Any) -> bool:
    """One record of a Gemini CLI session: its metadata, a message, an update or a rewind."""
    if not isinstance(value, dict):
        return False
    return (
        is_gemini_cli_session(value)
        or _is_message(value)
        or isinstance(value.get("$set"), dict)
        or isinstance(value.get("$rewindTo"), str)
    )


def _is_message(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("id"), str)
        and isinstance(value.get("type"), str)
        and value["type"] in _TYPES
    )


def _replayed(records: list[Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The session's metadata and messages once its records are replayed in order."""
    meta: dict[str, Any] = {}
    messages: dict[str, dict[str, Any]] = {}  # by id: one written again keeps its place
    for record in records:
        if not isinstance(record, dict):
            continue
        if isinstance(record.get("$rewindTo"), str):
            ids = list(messages)
            kept = ids[: ids.index(record["$rewindTo"])] if record["$rewindTo"] in ids else []
            messages = {key: messages[key] for key in kept}
        elif _is_message(record):
            messages[record["id"]] = record
        elif isinstance(record.get("$set"), dict) or is_gemini_cli_session(record):
            fields = record["$set"] if isinstance(record.get("$set"), dict) else record
            if isinstance(fields.get("messages"), list):
                if "$set" in record:
                    messages = {}
                messages.update((m["id"], m) for m in fields["messages"] if _is_message(m))
            meta.update((key, value) for key, value in fields.items() if key != "messages")
    return meta, list(messages.values())


def response_text(parts: Any) -> str | None:
    """The observation Gemini parts carry back to the model: the first `functionResponse`'s
    `output`, else its `error`, else its response as JSON; None where no part is one (Gemini
    CLI, and Qwen Code, its fork)."""
    for part in parts if isinstance(parts, list) else []:
        answer = part.get("functionResponse") if isinstance(part, dict) else None
        response = answer.get("response") if isinstance(answer, dict) else None
        if isinstance(response, dict):
            for key in ("output", "error"):
                if isinstance(response.get(key), str):
                    return str(response[key])
            return json.dumps(response, ensure_ascii=False)
    return None


def spoken_text(parts: list[dict[str, Any]]) -> str:
    """The text of Gemini parts as the model said it: their `text` joined, the parts marked
    `thought` (its reasoning) left out (Qwen Code's events, ADK's sessions)."""
    return "".join(
        str(p["text"]) for p in parts if isinstance(p.get("text"), str) and not p.get("thought")
    )


def function_calls(calls: list[dict[str, Any]]) -> list[tuple[Any, Any, str]]:
    """Gemini function calls (`id`, `name`, `args`) as `assistant_reply`'s calls, the
    arguments as JSON text (Gemini CLI's `toolCalls`, Qwen Code's `functionCall` parts)."""
    return [
        (call.get("id"), call.get("name"), json.dumps(call.get("args") or {}, ensure_ascii=False))
        for call in calls
    ]


def _result(call: dict[str, Any]) -> str:
    """A tool call's observation (`response_text`); where it has none, the text the CLI
    showed."""
    found = response_text(call.get("result"))
    shown = call.get("resultDisplay")
    return found if found is not None else shown if isinstance(shown, str) else ""


def _rounds(calls: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """A message's tool calls in the rounds they ran in: the CLI records a turn's later
    calls (made after the earlier ones' results) in the same message, each with its own
    `timestamp`; calls of one round share theirs."""
    rounds: list[list[dict[str, Any]]] = []
    for call in calls:
        if rounds and call.get("timestamp") == rounds[-1][-1].get("timestamp"):
            rounds[-1].append(call)
        else:
            rounds.append([call])
    return rounds


def _said(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A `gemini` message as chat messages: its text, then each round of its calls followed
    by their results."""
    calls = [call for call in message.get("toolCalls") or [] if isinstance(call, dict)]
    text = parts_text(message.get("content"))
    said: list[dict[str, Any]] = []
    if text.strip() and not calls:
        said.append(assistant_reply(text, []))
    for number, round_calls in enumerate(_rounds(calls)):
        said.append(assistant_reply(text if number == 0 else "", function_calls(round_calls)))
        for call in round_calls:
            result = {"role": "tool", "tool_call_id": call.get("id"), "content": _result(call)}
            if call.get("status") in ("error", "cancelled"):
                result["is_error"] = True
            said.append(result)
    return said


def _is_prompt(message: dict[str, Any]) -> bool:
    """A user message the user wrote: not a tool result sent back, not the CLI's own."""
    content = message.get("content")
    if isinstance(content, list) and any(
        isinstance(part, dict) and "functionResponse" in part for part in content
    ):
        return False
    text = parts_text(content).strip()
    return bool(text) and not text.startswith(_IGNORED)


def gemini_cli_records(records: list[Any]) -> list[tuple[Any, dict[str, Any]]]:
    """The session's records (`is_gemini_cli_record`) as one chat record (`session` the
    session's id), with its first record; none when it holds no record."""
    found = [record for record in records if is_gemini_cli_record(record)]
    if not found:
        return []
    meta, messages = _replayed(found)
    chat: list[dict[str, Any]] = []
    model = None
    for message in messages:
        if message["type"] == "user" and _is_prompt(message):
            chat.append({"role": "user", "content": parts_text(message.get("content"))})
        elif message["type"] == "gemini":
            model = model or message.get("model")
            chat.extend(_said(message))
    return [
        (
            found[0],
            {
                "messages": chat,
                "session": str(meta.get("sessionId") or "(no sessionId)"),
                "started": meta.get("startTime")
                or (messages[0].get("timestamp") if messages else None),
                "model": model if isinstance(model, str) and model else None,
            },
        )
    ]
