"""Chats as the Vercel AI SDK's UI keeps them (`UIMessage[]`, what `useChat` gives and apps
save), written as OpenAI's messages for the chat mapping (docs/import.md).

A UI message is an `id`, a `role` and its `parts`, in the order the model produced them:
`text`, `reasoning`, `step-start` (a model call began), and a part a tool call, with its
result once there is one. AI SDK 4 writes a call as a `tool-invocation` part
(`toolInvocation`: `toolCallId`, `toolName`, `args`, `state` `result` with its `result`) and
keeps the message's text in `content` and its calls in `toolInvocations` as well; AI SDK 5 on
writes a `tool-<name>` part (a `dynamic-tool` part names its `toolName`): `toolCallId`,
`input`, `state` (`output-available` with its `output`, `output-error` with its `errorText`,
`output-denied` where the user refused it).

`with_ui_parts` writes such messages as OpenAI's: a user's or system message's text parts
its content; an assistant message, part by part, its text up to each call and the call (its
input the arguments), then the call's result as a tool message (failed where it errored or
was refused); a call with no result yet is a call alone. Reasoning parts are not read (they
are not the answer), nor sources, files or step boundaries. An AI SDK 4 message without parts
gives its `toolInvocations`, then its `content`. Lists without UI messages are kept as they
are.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["is_ui_message", "with_ui_parts"]

_ROLES = frozenset({"user", "assistant", "system"})
_FAILED = {"output-error": "errorText", "output-denied": "approval"}
"""A UI tool part's states where the call failed, with the field that says why."""


def _role(message: dict[str, Any]) -> bool:
    """The message's role is one a UI message has (a role that is no text is none)."""
    role = message.get("role")
    return isinstance(role, str) and role in _ROLES


_PARTS = frozenset(
    {"text", "reasoning", "step-start", "tool-invocation", "dynamic-tool", "file", "source-url"}
)
"""The AI SDK's own part types (a tool's part is `tool-<name>`, a data part `data-<name>`)."""


def _ui_part(part: Any) -> bool:
    """A part of the AI SDK's: one of its types, and a text part's text in `text` (the
    OpenTelemetry GenAI messages' parts, `text` with `content` and `tool_call`, are not)."""
    if not isinstance(part, dict) or not isinstance(part.get("type"), str):
        return False
    kind = part["type"]
    if kind == "text":
        return isinstance(part.get("text"), str)
    return kind in _PARTS or kind.startswith(("tool-", "data-", "source-"))


def is_ui_message(value: Any) -> bool:
    """A UI message: a role and the AI SDK's typed parts (Gemini's `parts` have no `type`)."""
    if not isinstance(value, dict) or not _role(value):
        return False
    parts = value.get("parts")
    return isinstance(parts, list) and bool(parts) and all(_ui_part(p) for p in parts)


def _call(part: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
    """A tool part as an OpenAI call and its result message (None while it has none); None
    for a part that is no call."""
    kind = part["type"]
    if kind == "tool-invocation" and isinstance(part.get("toolInvocation"), dict):
        invocation = part["toolInvocation"]
        ident, name, arguments = (
            invocation.get("toolCallId"),
            invocation.get("toolName"),
            invocation.get("args"),
        )
        done = invocation.get("state") == "result"
        result, failed = invocation.get("result"), False
    elif kind == "dynamic-tool" or kind.startswith("tool-"):
        ident, arguments = part.get("toolCallId"), part.get("input")
        name = part.get("toolName") if kind == "dynamic-tool" else kind.removeprefix("tool-")
        state = part.get("state")
        why = _FAILED.get(state) if isinstance(state, str) else None
        failed = why is not None
        done = state == "output-available" or failed
        result = part.get(why) if why is not None else part.get("output")
    else:
        return None
    call = {"id": ident, "type": "function", "function": {"name": name, "arguments": arguments}}
    if not done:
        return call, None
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    said: dict[str, Any] = {"role": "tool", "tool_call_id": ident, "content": text}
    if failed:
        said["is_error"] = True
    return call, said


def _invocations(message: dict[str, Any]) -> list[dict[str, Any]]:
    """An AI SDK 4 message's `toolInvocations` as the parts they are."""
    found = message.get("toolInvocations")
    calls = found if isinstance(found, list) else []
    return [{"type": "tool-invocation", "toolInvocation": c} for c in calls if isinstance(c, dict)]


def _assistant(message: dict[str, Any]) -> list[dict[str, Any]]:
    parts = message.get("parts")
    if not isinstance(parts, list):  # AI SDK 4 without parts: its calls, then its text
        parts = [*_invocations(message), {"type": "text", "text": message.get("content")}]
    written: list[dict[str, Any]] = []
    text: list[str] = []
    for part in parts:
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            continue
        if part["type"] == "text" and isinstance(part.get("text"), str):
            text.append(part["text"])
            continue
        found = _call(part)
        if found is None:
            continue  # reasoning, sources, files, step boundaries
        call, result = found
        written.append(
            {"role": "assistant", "content": "\n".join(text) or None, "tool_calls": [call]}
        )
        text = []
        if result is not None:
            written.append(result)
    if text or not written:
        written.append({"role": "assistant", "content": "\n".join(text)})
    return written


def _said(message: Any) -> list[Any]:
    if not isinstance(message, dict) or not _role(message):
        return [message]  # the mapping says why
    if message["role"] == "assistant":
        return _assistant(message)
    parts = message.get("parts")
    if not isinstance(parts, list):
        return [message]
    texts = [p.get("text") for p in parts if isinstance(p, dict) and p.get("type") == "text"]
    return [{"role": message["role"], "content": "\n".join(t for t in texts if isinstance(t, str))}]


def with_ui_parts(messages: list[Any]) -> list[Any]:
    """`messages` with the AI SDK's UI messages written as OpenAI's (above); lists without
    them are kept as they are."""
    if not any(
        is_ui_message(m) or (isinstance(m, dict) and isinstance(m.get("toolInvocations"), list))
        for m in messages
    ):
        return messages
    return [said for message in messages for said in _said(message)]
