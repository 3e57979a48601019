"""What an OpenLLMetry entity's arguments and result say (`traceloop.entity.input` / `output`).

Traceloop's SDK keeps a decorated function's arguments as `{"args": [...], "kwargs": {...}}`
and its result as `json.dumps(result)`. Its LangChain instrumentation wraps a tool's arguments
as `{"input_str": ..., "inputs": {...}, "tags": ..., "metadata": ..., "kwargs": ...}`, a
tool's result as `{"output": ..., "kwargs": ...}` and a chain's or graph's as `{"outputs": ...,
"kwargs": ...}`, where the value is LangChain's serialisation of a message (`{"lc": 1, "type":
"constructor", "id": [..., "ToolMessage"], "kwargs": {"content": ...}}`) or a LangGraph state
holding the run's messages. Checked on the spans of tests/data/openllmetry.
"""

from __future__ import annotations

import json
from typing import Any

from transforms._langchain import message_content, messages_answer

__all__ = ["entity_arguments", "entity_result"]


def _loaded(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def entity_arguments(text: str) -> str:
    """A tool's arguments: LangChain's `inputs`, the decorator's keyword arguments when it
    was given none by position; any other text as it is."""
    ok, value = _loaded(text)
    if not ok or not isinstance(value, dict):
        return text
    if "input_str" in value and isinstance(value.get("inputs"), dict):
        return _json(value["inputs"])
    if value.keys() == {"args", "kwargs"} and value["args"] == []:
        return _json(value["kwargs"])
    return text


def entity_result(text: str) -> str:
    """A tool's result or a run's answer: a JSON string's text; LangChain's wrapped result
    unwrapped, a message as its content, a LangGraph state as its last model message's text;
    another wrapped value as its JSON, anything else as it is."""
    ok, value = _loaded(text)
    if not ok:
        return text
    wrapped = False
    if isinstance(value, dict):
        for key in ("output", "outputs"):
            if key in value and value.keys() <= {key, "kwargs"}:
                value, wrapped = value[key], True
                break
    if isinstance(value, str):
        return value
    said = message_content(value)
    if said is not None:
        return said
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        answer = messages_answer(value["messages"])
        if answer is not None:
            return answer
    return _json(value) if wrapped else text
