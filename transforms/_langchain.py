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

__all__ = ["message_content", "messages_answer", "output_said"]

_KINDS = {
    "ai": "AIMessage",
    "human": "HumanMessage",
    "system": "SystemMessage",
    "tool": "ToolMessage",
}
"""`messages_to_dict`'s types as the message classes."""


def _message(value: Any) -> tuple[str, Any] | None:
    """A serialised message's class (a streamed chunk's as its message's) and content; None
    for anything else."""
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
    return (kind, fields.get("content")) if isinstance(fields, dict) else None


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
