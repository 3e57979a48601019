"""What LlamaIndex's agent workflows say through OpenInference's LlamaIndex instrumentation
(openinference-instrumentation-llama-index; checked on a FunctionAgent's spans,
tests/data/openinference-llama-index).

A workflow step's output is Python's `repr` of its event, cut short (`StopEvent(result=
AgentOutput(response=ChatMessage(...`): no answer can be read from it, so a run whose output is
one is answered by its last model call's text. A tool's output is its `ToolOutput` as JSON
(`{"blocks": [{"text": ...}], "tool_name", "raw_input", "raw_output", "is_error"}`): its text,
and `{"error": text}` where `is_error` is true.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["EVENT_REPR", "tool_output_text"]

EVENT_REPR = r"^(StopEvent|AgentOutput|AgentInput|AgentSetup|AgentStream|ToolCall|ToolCallResult)\("
"""A workflow event written as Python's `repr`, as a step's output."""


def tool_output_text(value: dict[str, Any]) -> str | None:
    """A `ToolOutput` (a decoded JSON object, `blocks` first)'s text (its blocks' text, else its
    raw output as text), as `{"error": text}` where it says it is an error; None for anything
    else."""
    if next(iter(value), None) != "blocks" or not {"raw_output", "is_error"} <= value.keys():
        return None
    blocks = value["blocks"] if isinstance(value["blocks"], list) else []
    texts = [b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)]
    raw = value["raw_output"]
    said = "\n".join(texts) if texts else raw if isinstance(raw, str) else json.dumps(raw)
    return json.dumps({"error": said}, ensure_ascii=False) if value["is_error"] is True else said
