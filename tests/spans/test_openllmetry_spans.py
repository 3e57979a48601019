"""Spans of Traceloop's OpenLLMetry as its SDK writes them, imported and scored step by step.

tests/data/openllmetry holds the same two runs of a plain OpenAI function-calling agent and of
LangGraph's ReAct agent, each traced by traceloop-sdk 0.52.6 (the names OpenLLMetry used until
2026-03: `llm.request.type`, `gen_ai.prompt.N`, `traceloop.span.kind`, `traceloop.entity.input`
/ `output`, no `gen_ai.operation.name`) and by 0.62.4 (the GenAI names beside the `traceloop.*`
ones; LangChain's tools wrap their arguments and result the same way in both). capture.py
there wrote them; tests/data/SOURCES.md says how.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipelines.otel_import import import_otel
from pipelines.score import score_traces
from storage.store.duckdb_store import DuckDBStore

DATA = Path(__file__).resolve().parent.parent / "data" / "openllmetry"
FILES = {
    # file: the agent it names, the traces rejected (0.62.4 traces LangGraph's agent being
    # built, `create_agent`, as a trace of its own: no run, rejected with its reason)
    "traceloop-sdk-0.52.6.jsonl": ("weather-agent", {}),
    "traceloop-sdk-0.62.4.jsonl": ("weather-agent", {}),
    "langgraph-0.52.6.jsonl": ("weather-agent", {}),
    "langgraph-0.62.4.jsonl": ("LangGraph", {"empty_trajectory": 1}),
}


def _traces(out: Path) -> dict[str, dict[str, Any]]:
    return {t["task"]["objective"]: t for t in pl.read_parquet(out).to_dicts()}


def _kinds(trace: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(s["type"], (s["tool"] or {}).get("name")) for s in trace["steps"]]


@pytest.mark.parametrize("name", FILES)
def test_each_run_is_a_trace_with_its_tool_calls_and_answer(tmp_path: Path, name: str) -> None:
    out = tmp_path / "traces.parquet"
    agent, rejected = FILES[name]
    summary = import_otel([str(DATA / name)], str(out))

    assert (summary.imported, summary.rejected, summary.records_rejected) == (2, rejected, 0)
    assert summary.balanced
    # two tool calls, one retry, two answers; the model calls that only ask for a tool say
    # nothing, and LangGraph's nodes and chains (`task` spans) are not the agent's work
    assert summary.spans["mapped"] == 5
    traces = _traces(out)
    berlin = traces["What's the weather in Berlin right now?"]
    assert _kinds(berlin) == [("tool_call", "get_weather"), ("thought", None)]
    call, answer = berlin["steps"]
    assert json.loads(call["input"]) == {"city": "Berlin"}  # unwrapped
    assert call["output_summary"] == "cloudy, 15 C"  # the JSON text, LangChain's ToolMessage
    assert answer["content"] == "The weather in Berlin: cloudy, 15 C"
    assert berlin["outcome"]["result_summary"] == "The weather in Berlin: cloudy, 15 C"
    assert berlin["metadata"]["agent_id"] == agent

    atlantis = traces["Is it raining in Atlantis?"]
    assert _kinds(atlantis) == [
        ("tool_call", "get_weather"),
        ("error_recovery", "get_weather"),
        ("thought", None),
    ]
    failed, retried, _ = atlantis["steps"]
    assert json.loads(failed["output_summary"]) == {"error": "unknown city 'Atlantis'"}
    assert json.loads(retried["input"]) == {"city": "Atlantis, Bahamas"}
    assert atlantis["outcome"]["result_summary"] == "The weather in Atlantis: cloudy, 15 C"

    score_traces([str(out)], db=str(tmp_path / "scores.duckdb"), no_embedder=True)
    with DuckDBStore(str(tmp_path / "scores.duckdb"), read_only=True) as store:
        rows = store.sql(
            "SELECT objective, n_steps, error_recovery, level FROM latest_scores "
            "JOIN traces USING (trace_id) JOIN confidence_traces USING (trace_id) "
            "ORDER BY objective"
        ).rows()
    assert [row[:3] for row in rows] == [
        ("Is it raining in Atlantis?", 3, 1),
        ("What's the weather in Berlin right now?", 2, 0),
    ]
    assert rows[0][3] != "SILENT"  # the failed call is seen by the levels


def _rewritten(tmp_path: Path, change: dict[str, str]) -> Path:
    """The 0.52.6 file with each tool span's attributes updated by `change`."""
    lines = []
    for line in (DATA / "traceloop-sdk-0.52.6.jsonl").read_text().splitlines():
        span = json.loads(line)
        if span["attributes"].get("traceloop.span.kind") == "tool":
            span["attributes"].update(change)
        lines.append(json.dumps(span))
    path = tmp_path / "spans.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    "result",
    ['{"sky": "cloudy", "celsius": 15}', '{"sky":"cloudy"}', "not JSON", "[1, 2]"],
)
def test_a_result_that_is_not_a_string_or_a_message_stays_as_written(
    tmp_path: Path, result: str
) -> None:
    out = tmp_path / "traces.parquet"
    import_otel([str(_rewritten(tmp_path, {"traceloop.entity.output": result}))], str(out))

    call = _traces(out)["What's the weather in Berlin right now?"]["steps"][0]
    assert call["output_summary"] == result


def test_a_task_span_is_not_a_step(tmp_path: Path) -> None:
    out = tmp_path / "traces.parquet"
    import_otel([str(_rewritten(tmp_path, {"traceloop.span.kind": "task"}))], str(out))

    # a decorated task is any function the agent ran, not a tool: only the answers are steps
    traces = _traces(out)
    assert [_kinds(t) for t in traces.values()] == [[("thought", None)], [("thought", None)]]
