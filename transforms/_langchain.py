"""LangChain's messages as its instrumentations write them, in either serialisation.

`dumpd` (OpenLLMetry's LangChain instrumentation, OpenInference's model calls): `{"lc": 1,
"type": "constructor", "id": [..., "AIMessage"], "kwargs": {"content": ...}}`. `messages_to_dict`
(OpenInference's LangChain instrumentation, for a chain's or a tool's input and output):
`{"type": "ai", "data": {"content": ..., ...}}`. A message's own fields (LangSmith's runs of a
chain or a tool): `{"type": "ai", "content": ..., ...}`. A LangGraph state holds the run's
messages under `messages`. Checked on the spans of tests/data/openllmetry, tests/data/openinference
and the runs of tests/data/langsmith.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "is_langchain_message",
    "message_content",
    "messages_answer",
    "output_said",
    "with_langchain_messages",
]

_KINDS = {
    "ai": "AIMessage",
    "human": "HumanMessage",
    "system": "SystemMessage",
    "tool": "ToolMessage",
    "AIMessageChunk": "AIMessage",
    "HumanMessageChunk": "HumanMessage",
    "SystemMessageChunk": "SystemMessage",
    "ToolMessageChunk": "ToolMessage",
}
"""`messages_to_dict`'s types as the message classes (a streamed chunk's type is its class's
name)."""


def _message(value: Any) -> tuple[str, Any] | None:
    """A serialised message's class (a streamed chunk's as its message's) and content; None
    for anything else."""
    found = _fields(value)
    return None if found is None else (found[0], found[1].get("content"))


def _fields(value: Any) -> tuple[str, dict[str, Any]] | None:
    """A serialised message's class (a streamed chunk's as its message's) and its fields;
    None for anything else."""
    if not isinstance(value, dict):
        return None
    kind, fields = value.get("type"), value.get("data")
    if kind == "constructor" and isinstance(value.get("id"), list) and value["id"]:
        kind, fields = str(value["id"][-1]).removesuffix("Chunk"), value.get("kwargs")
        if not kind.endswith("Message"):
            return None
    elif isinstance(kind, str) and kind in _KINDS and value.keys() <= {"type", "data"}:
        kind = _KINDS[kind]
    elif isinstance(kind, str) and kind in _KINDS and "content" in value and "data" not in value:
        kind, fields = _KINDS[kind], value  # the message's own fields (LangSmith's runs)
    else:
        return None
    return (kind, fields) if isinstance(fields, dict) else None


def _text(content: Any) -> str | None:
    """A message's content as text: a string, or its text parts joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            part if isinstance(part, str) else part.get("text")
            for part in content
            if isinstance(part, str) or (isinstance(part, dict) and part.get("type") == "text")
        ]
        return "\n".join(text for text in texts if isinstance(text, str)) or None
    return None


def message_content(value: Any) -> str | None:
    """The text of a serialised message; None for anything else."""
    found = _message(value)
    return None if found is None else _text(found[1])


def messages_answer(messages: list[Any]) -> str | None:
    """The text of the last model message among serialised messages that has text."""
    for message in reversed(messages):
        found = _message(message)
        if found is not None and found[0] == "AIMessage":
            text = _text(found[1])
            if text:
                return text
    return None


def output_said(value: Any) -> str | None:
    """What a chain's or tool's output (decoded JSON) says where it is LangChain's: a
    message's text (a tool's `ToolMessage`), or a state's last model message's; None
    otherwise."""
    said = message_content(value)
    if said is not None:
        return said
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        return messages_answer(value["messages"])
    return None


def is_langchain_message(value: Any) -> bool:
    """A LangChain message serialised (`dumpd`, `messages_to_dict`)."""
    return _fields(value) is not None


_ROLES = {"HumanMessage": "user", "SystemMessage": "system"}


def _said(value: Any) -> Any:
    """A serialised message as an OpenAI message; anything else as it is."""
    found = _fields(value)
    if found is None:
        return value
    kind, fields = found
    text = _text(fields.get("content"))
    if kind in _ROLES:
        return {"role": _ROLES[kind], "content": text}
    if kind == "ToolMessage":
        said = {"role": "tool", "tool_call_id": fields.get("tool_call_id"), "content": text}
        if fields.get("status") == "error":
            said["is_error"] = True
        return said
    calls = fields.get("tool_calls")
    reply: dict[str, Any] = {"role": "assistant", "content": text}
    if kind == "AIMessage" and isinstance(calls, list) and calls:
        reply["tool_calls"] = [
            {
                "id": call.get("id"),
                "type": "function",
                "function": {"name": call.get("name"), "arguments": call.get("args")},
            }
            if isinstance(call, dict)
            else call
            for call in calls
        ]
    elif kind == "AIMessage":  # older dumps keep the provider's calls only (OpenAI's shape)
        extra = fields.get("additional_kwargs")
        given = extra.get("tool_calls") if isinstance(extra, dict) else None
        if isinstance(given, list) and given:
            reply["tool_calls"] = given
    return reply if kind == "AIMessage" else value


def with_langchain_messages(messages: list[Any]) -> list[Any]:
    """`messages` with LangChain's serialised messages (a LangGraph state's `messages`
    dumped with `dumpd`, or `messages_to_dict`'s list) written as OpenAI's: a human message
    the user's, an AI message (or chunk) the assistant's text and its `tool_calls` (`name`,
    `args`, `id`), a tool message the result of the call it names (failed where its status is
    `error`); lists without them are kept as they are."""
    if not any(is_langchain_message(m) for m in messages):
        return messages
    return [_said(message) for message in messages]
