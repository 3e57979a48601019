"""Message lists as trace exports keep them, in the one shape the OTel mapping reads.

Langfuse observations and MLflow spans keep a model call's input and output as JSON (often
encoded as text once more): a list of messages, one message, LangChain's `{"messages": [...]}`
with `type` human/ai, OpenAI's request (`{"model", "messages", ...}`) or its completion
(`{"choices": [{"message": ...}]}`). These helpers decode them and give back a list of
messages with a `role` and text `content`, for `gen_ai.input.messages` / `gen_ai.output.messages`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["decoded", "message_fields", "message_list", "message_text", "text_of"]


def decoded(value: Any) -> Any:
    """A field kept as JSON text (an object, an array, a quoted string), decoded once; other
    text as it is."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "[", '"'):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def text_of(value: Any) -> str | None:
    """A field as text: decoded once, then JSON text again unless it is a string."""
    value = decoded(value)
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
"""LangChain's message types as roles (`{"type": "human", "content": ...}`)."""


def message_list(value: Any) -> list[dict[str, Any]] | None:
    """Input or output as a message list (each with a role): a list of messages, one
    message, LangChain's `{"messages": [...]}` (and OpenAI's request, which holds its
    messages the same way), or OpenAI's completion (each choice's message); None for
    anything else."""
    value = decoded(value)
    if isinstance(value, Mapping) and isinstance(value.get("messages"), list):
        value = value["messages"]
    elif isinstance(value, Mapping) and isinstance(value.get("choices"), list):
        value = [c.get("message") if isinstance(c, Mapping) else c for c in value["choices"]]
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list) or not value:
        return None
    messages = [_message(item) for item in value]
    return None if any(message is None for message in messages) else messages  # type: ignore[return-value]


def _message(item: Any) -> dict[str, Any] | None:
    """A message with a role and text content: LangChain's `type` as the role, OpenAI-style
    content parts (`{"type": "text", "text"}`) joined, GenAI `parts` kept as they are."""
    if not isinstance(item, Mapping):
        return None
    role = item.get("role") or _ROLES.get(str(item.get("type")))
    if not isinstance(role, str):
        return None
    message = {**item, "role": role}
    content = item.get("content")
    if isinstance(content, list):
        texts = [
            part.get("text") for part in content if isinstance(part, Mapping) and part.get("text")
        ]
        message["content"] = "\n".join(str(text) for text in texts)
    return message


def last_answer(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last assistant message of an output (a run's output repeats its whole history)."""
    said = [message for message in messages if message["role"] == "assistant"]
    return said[-1:]


def message_text(value: Any, which: str) -> str | None:
    """One side of a call as its message attribute's JSON text, where it is a message list:
    the input's messages (`which` "input"), or the output's last assistant message ("output":
    a run's output repeats its history); None otherwise."""
    messages = message_list(value)
    if which == "output" and messages is not None:
        messages = last_answer(messages)
    return json.dumps(messages, ensure_ascii=False) if messages else None


def message_fields(given: Any, got: Any) -> dict[str, str]:
    """A call's input and output as the OTel mapping's message attributes (`message_text`):
    `gen_ai.input.messages` and `gen_ai.output.messages`, where they are message lists."""
    said = {
        which: message_text(value, which) for which, value in (("input", given), ("output", got))
    }
    return {f"gen_ai.{which}.messages": text for which, text in said.items() if text is not None}
