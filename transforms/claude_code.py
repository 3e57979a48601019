"""Claude Code session transcripts (the JSON lines Claude Code writes to
`~/.claude/projects/<project>/<session>.jsonl`, and each subagent's to
`<session>/subagents/agent-<id>.jsonl`) as chat trajectories, mapped by the chat mapping with
`CLAUDE_CODE_KEYS` (docs/formats.md).

Each line is an event with a `type`, a `uuid`, a `timestamp` and the `sessionId`. The
conversation is in the `user` and `assistant` events, whose `message` is an Anthropic
Messages API message: the assistant's content blocks (`text`, `thinking`, `tool_use`; Claude
Code writes one event a block), the user's prompt (text) or `tool_result` blocks answering
the calls (`is_error` where the call failed, was refused or interrupted). The other events
(`progress` of hooks and tools, `system`, `file-history-snapshot`, `queue-operation`,
`summary`) are not steps. The trajectory:
- one a session, in the order the file holds its events; a subagent's events (`isSidechain`,
  with its `agentId`) are a trajectory of their own, keyed by the session and the agent
  (Claude Code 1.0 wrote them into the session's file with no `agentId`: each chain of them,
  from an event with no parent, is one subagent's, keyed by its first event's `uuid`);
  several sessions in one file (transcripts joined) are as many trajectories;
- the first prompt the user typed is the objective: not the messages Claude Code adds as
  the user's (`isMeta` notes, the summary that continues a compacted conversation, the output
  of local commands such as `/mcp`), nor a slash command's line, unless the session holds no
  other prompt (then the command as typed, `/review 42`, not Claude Code's markup of it);
- the assistant's text blocks are thoughts and the last one is the answer; each `tool_use`
  block a call, its `tool_result` the observation, a failed call where `is_error` is true;
- the model of the first assistant event Claude Code did not write itself (`<synthetic>`:
  an API error, a usage limit) is the agent; such a message is the assistant's text all the
  same (a session that ended on an API error has that error as its answer: what it showed).
A transcript records no outcome: unknown (SPEC 1). A conversation rewound in place keeps its
abandoned turns in the file, which are read as written.
"""

from __future__ import annotations

import re
from typing import Any

from transforms._chat_shapes import log_keys, parts_text

__all__ = [
    "CLAUDE_CODE_KEYS",
    "claude_code_records",
    "is_claude_code_event",
]

CLAUDE_CODE_KEYS = log_keys("session")
"""The chat mapping's keys for a record of `claude_code_records` (no success field: unknown)."""

_SYNTHETIC = "<synthetic>"
"""The model Claude Code names on an assistant message it wrote itself."""

_ADDED = re.compile(r"^\s*<(local-command-stdout|local-command-stderr|local-command-caveat)>")
"""A user message that is the output of a local command, or the caveat before it."""

_COMMAND = re.compile(r"^\s*<command-(name|message|args)>")
"""A user message that is a slash command's line."""


def is_claude_code_event(value: Any) -> bool:
    """One line of a Claude Code transcript: an event of a session (its `type` and
    `sessionId`: a conversation event, a progress or system line, a title Claude Code gave
    the session, ...), or a summary or file snapshot line that opens many transcripts; not a
    record holding a list of `messages` (a chat trajectory of some other tool)."""
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        return False
    if value["type"] == "file-history-snapshot":
        return "snapshot" in value and "messageId" in value
    if value["type"] == "summary":
        return "leafUuid" in value
    return isinstance(value.get("sessionId"), str) and not isinstance(value.get("messages"), list)


def _is_result(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(part, dict) and part.get("type") == "tool_result" for part in content
    )


def _kind(event: dict[str, Any]) -> str:
    """What a user event is: "result" (tool results), "added" (Claude Code's own message),
    "command" (a slash command's line) or "prompt"."""
    content = event["message"].get("content")
    if _is_result(content):
        return "result"
    if (
        event.get("isMeta")
        or event.get("isCompactSummary")
        or event.get("isVisibleInTranscriptOnly")
    ):
        return "added"
    text = parts_text(content, "text")
    if not text.strip() or _ADDED.match(text):  # an image alone, an empty line: no prompt
        return "added"
    return "command" if _COMMAND.match(text) else "prompt"


_PART = re.compile(r"<command-(name|args)>(.*?)</command-\1>", re.DOTALL)


def _as_typed(message: dict[str, Any]) -> dict[str, Any]:
    """A slash command's line as the user typed it (`/review 42`), not Claude Code's markup
    of it (`<command-message>...</command-message><command-name>/review</command-name>...`)."""
    parts = dict(_PART.findall(parts_text(message.get("content"), "text")))
    typed = " ".join(part.strip() for part in (parts.get("name"), parts.get("args")) if part)
    return {**message, "content": typed} if typed.strip() else message


def _model(events: list[dict[str, Any]]) -> str | None:
    for event in events:
        model = event["message"].get("model") if event["type"] == "assistant" else None
        if isinstance(model, str) and model and model != _SYNTHETIC:
            return model
    return None


def _record(key: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    """One session's (or subagent's) conversation events as one chat record."""
    kinds = {id(e): _kind(e) for e in events if e["type"] == "user"}
    prompted = any(kind == "prompt" for kind in kinds.values())
    kept = ("prompt", "result") if prompted else ("prompt", "result", "command")
    messages: list[Any] = []
    for event in events:
        if event["type"] == "assistant" or kinds[id(event)] in kept:
            command = kinds.get(id(event)) == "command"
            messages.append(_as_typed(event["message"]) if command else event["message"])
    return {
        "messages": messages,
        "session": key,
        "started": events[0].get("timestamp"),
        "model": _model(events),
    }


def claude_code_records(events: list[Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The transcript's events (`is_claude_code_event`) as chat records, one a session and
    one a subagent of it (`session` its key: the session id, then `/` and the agent id), in
    the order of their first conversation event, each with that event; events that hold no
    conversation message are left out (they are not steps), and so is a session with no
    conversation."""
    sessions: dict[str, list[dict[str, Any]]] = {}
    seen: set[str] = set()
    roots: dict[Any, Any] = {}  # a sidechain event's uuid: the uuid its chain starts at
    for event in events:
        if not isinstance(event, dict) or event.get("type") not in ("user", "assistant"):
            continue
        if not isinstance(event.get("message"), dict):
            continue
        uuid = event.get("uuid")
        if isinstance(uuid, str):  # a line written twice is one event
            if uuid in seen:
                continue
            seen.add(uuid)
        key = str(event.get("sessionId"))
        if event.get("isSidechain") is True:
            # Claude Code 1.0 wrote its subagents into the session's file with no agentId:
            # each chain of events from a first one (no parent) is one subagent's
            parent = event.get("parentUuid")
            root = (roots.get(parent) if parent is not None else None) or uuid
            if isinstance(uuid, str):
                roots[uuid] = root
            key += f"/{event.get('agentId') or root or 'sidechain'}"
        sessions.setdefault(key, []).append(event)
    return [(found[0], _record(key, found)) for key, found in sessions.items()]
