"""ToolBench answer files (ToolLLM's DFSDT runs, 2023) as chat trajectories: the chain that
gave the answer, in OpenAI's legacy function-calling shape, mapped by the chat mapping with
the keys of `TOOLBENCH_KEYS` (docs/formats.md).

An answer file is one object: `answer_generation` holds the `query` (the task), the
`train_messages` (prefixes of one conversation, each ending at an assistant turn; the last is
the whole chain) and `finish_type`; `win` is ToolEval's verdict on the answer, the trace's
success label; `tree` (the whole search, abandoned branches included) is not read.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TOOLBENCH_KEYS", "is_toolbench", "toolbench_record"]

TOOLBENCH_KEYS: dict[str, Any] = {
    "messages_field": "messages",
    "objective_field": "query",
    "success": "win",
    "id_fields": ["query"],
}
"""The chat mapping's keys for a record of `toolbench_record`: the trace id follows the task."""


def is_toolbench(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("answer_generation"), dict)


def toolbench_record(value: Any) -> Any:
    """The chat record of one answer file: its last chain as `messages`, `query`, `win`;
    anything else is handed on as it is, for the mapping to reject with its reason."""
    if not is_toolbench(value):
        return value
    generation = value["answer_generation"]
    chains = generation.get("train_messages")
    last = chains[-1] if isinstance(chains, list) and chains else None
    return {"messages": last, "query": generation.get("query"), "win": value.get("win")}
