"""LangSmith runs to span rows: a run as LangSmith hands it out.

`Client.list_runs` (and the API's `POST /runs/query`, `{"runs": [...]}`) gives each run of a
trace as one object: `id`, `trace_id` and `parent_run_id` (UUIDs), `run_type` (llm, chain,
tool, retriever, embedding, prompt, parser), `name`, `start_time` and `end_time` (ISO-8601),
`inputs`, `outputs`, `error` (the exception and its traceback, as text), `extra.metadata`,
`dotted_order`. A file holds an array of runs (`[run.dict() for run in client.list_runs(...)]`,
dumped with `default=str`), one run a line, or such a page. LangSmith's CLI (`langsmith trace
export DIR --full`: a file per trace, one run a line) names a run's id `run_id`.

Each run becomes one Phoenix table row (`storage.spans.phoenix`), so the OTel mapping reads it as
it reads OpenInference's LangChain spans: `run_type` as the span kind; a model call's inputs
(`{"messages": [[...]]}`, LangChain's `dumpd` of each message) and outputs (`generations`, each
holding its message) as `gen_ai.input.messages` and `gen_ai.output.messages`; a tool run's name
as its tool, its inputs as the arguments and its output (a `ToolMessage`'s content) as the
result; other runs' inputs and outputs as `input.value` and `output.value`, a value LangSmith
wrapped as `{"output": ...}` unwrapped; a run with an `error` as a failed
span whose status message is that error. Ids: a trace's UUID is its 32 hex digits, a run's the
first 16 of the SHA-256 of its UUID (a span id has 8 bytes). Not read: feedback, token counts
and costs, `serialized`, `events` (docs/import.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storage.spans._messages import decoded
from storage.spans._runs import run_row, uuid_hex

__all__ = ["is_langsmith_run", "langsmith_page", "langsmith_row"]

_KINDS = {
    "llm": "LLM",
    "chain": "CHAIN",
    "tool": "TOOL",
    "retriever": "RETRIEVER",
    "embedding": "EMBEDDING",
}
"""LangSmith run types as OpenInference span kinds; prompt and parser runs say nothing."""

_RUN_TYPES = frozenset({*_KINDS, "prompt", "parser"})


def is_langsmith_run(value: object) -> bool:
    """True for a LangSmith run: an object with an `id` (`run_id` as LangSmith's CLI writes
    it), a known `run_type` and the keys that place it in a trace (`trace_id` or
    `dotted_order`, and `parent_run_id`)."""
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("run_type"), str)
        and value["run_type"] in _RUN_TYPES
        and ("id" in value or "run_id" in value)
        and "parent_run_id" in value
        and ("trace_id" in value or "dotted_order" in value)
    )


def langsmith_page(value: object) -> list[Any] | None:
    """The runs of a page of LangSmith's run query (`{"runs": [...], "cursors": ...}`) when
    each is a run; None for anything else."""
    if not isinstance(value, Mapping):
        return None
    runs = value.get("runs")
    if not isinstance(runs, list) or not runs or not all(map(is_langsmith_run, runs)):
        return None
    return runs


def _trace_id(run: Mapping[str, Any]) -> str | None:
    """The run's trace as 32 hex digits: `trace_id`, else the root's UUID that starts its
    `dotted_order` (each part a time stamp of 22 characters, then the run's UUID)."""
    found = uuid_hex(run.get("trace_id"))
    order = run.get("dotted_order")
    if found is None and isinstance(order, str) and len(order) >= 58:
        found = uuid_hex(order.split(".", 1)[0][22:])
    return found


def langsmith_row(run: Mapping[str, Any]) -> dict[str, Any]:
    """One LangSmith run (`is_langsmith_run`) as a Phoenix table row."""
    error = run.get("error")
    extra: dict[str, Any] = {}
    if run.get("parent_run_id") is None:  # the trace's root: an agent's or a graph's run
        extra["agent.name"] = run.get("name")
        # the tags the run was invoked with; an inner run's are LangGraph's (`graph:step:1`)
        tags = run.get("tags")
        if isinstance(tags, list) and tags:
            extra["tag.tags"] = tags
    return run_row(
        (_trace_id(run), run.get("id") or run.get("run_id"), run.get("parent_run_id")),
        run.get("name"),
        (run.get("start_time"), run.get("end_time")),
        _KINDS.get(str(run.get("run_type"))),
        error if isinstance(error, str) and error.strip() != "" else None,
        (decoded(run.get("inputs")), decoded(run.get("outputs"))),
        extra,
    )
