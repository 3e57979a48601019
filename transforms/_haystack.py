"""What Haystack's own spans say (haystack-ai 3, traced to OpenTelemetry by its
`opentelemetry-haystack` tracer with `HAYSTACK_CONTENT_TRACING_ENABLED=true`).

An Agent's run is a `haystack.agent.run` span: `haystack.agent.input` holds the messages it was
given, `haystack.agent.output` the whole conversation at its end, each as `{"messages": [...]}`.
Each model call is a `haystack.agent.step.llm` span whose `haystack.agent.step.llm.output` is
`{"replies": [...]}` (its input is Python's `repr` of the messages, not read), and each tool call
a `haystack.agent.step.tool` span (`haystack.tool.name`, `haystack.agent.step.tool.input` and
`.output`; a failed call's output `{"error": ...}`, with `haystack.tool.error` true). In a pipeline, each
component is a `haystack.component.run` span; a chat generator's (`haystack.component.type`
ending in `ChatGenerator`) is a model call, its `haystack.component.input` the messages it was
sent (`{"messages": [...]}`) and its `haystack.component.output` its replies. A message is
`{"role", "content": [{"text": ...}, {"tool_call": ...}, {"tool_call_result": ...}]}`. Checked
on the spans of tests/data/haystack.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["HAYSTACK_KEYS", "replies_text", "run_answer", "run_objective"]

HAYSTACK_KEYS = (
    "haystack.agent.input",
    "haystack.agent.output",
    "haystack.agent.step.llm.output",
    "haystack.tool.name",
    "haystack.agent.step.tool.input",
    "haystack.agent.step.tool.output",
    "haystack.component.type",
    "haystack.component.input",
    "haystack.component.output",
)
"""Haystack's names the mapping reads: a run's messages, a model call's replies, a tool call."""


def _listed(text: str | None, field: str) -> list[dict[str, Any]]:
    """The messages under `field` of a JSON object, those that are objects."""
    try:
        value = json.loads(text) if text else None
    except ValueError:
        return []
    found = value.get(field) if isinstance(value, dict) else None
    return [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []


def _text(message: dict[str, Any]) -> str | None:
    """A message's text blocks joined by newlines; None where it has none (a tool call)."""
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    texts = [b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return "\n".join(texts) if texts else None


def run_objective(text: str | None) -> str | None:
    """The text of the first user message a run was given."""
    users = (_text(m) for m in _listed(text, "messages") if m.get("role") == "user")
    return next((found for found in users if found is not None), None)


def run_answer(text: str | None) -> str | None:
    """The text of the last assistant message of a run's conversation that has text."""
    said = [_text(m) for m in _listed(text, "messages") if m.get("role") == "assistant"]
    return next((found for found in reversed(said) if found is not None), None)


def replies_text(text: str | None) -> str | None:
    """The text of a model call's replies, joined by newlines; None for replies that only ask
    for tools."""
    texts = [found for m in _listed(text, "replies") if (found := _text(m)) is not None]
    return "\n".join(texts) if texts else None
