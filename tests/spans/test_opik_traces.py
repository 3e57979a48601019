"""Opik's traces as a user exports them (tests/data/opik, made by its capture.py: the same agent
twice, as plain functions under `@opik.track` calling a `track_openai` client and as a LangGraph
graph traced by Opik's `OpikTracer`; three runs each, the third failing on a tool's exception)
score with no flag: the files Opik's CLI writes (`opik export ... traces`, a trace and its
spans a file) and the spans the SDK's `search_spans` gives, dumped as one array. `@opik.track`
logs the agent's run as the trace's one top span; `OpikTracer` logs the graph's run as the
trace and each node as a top span, so the trace is read as the run they belong to. A failed
call's result is the span's error: `Type: message` from `@opik.track`, LangChain's error text
from `OpikTracer`, which gives no message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from captured import scored, weather_traces
from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "opik"

FAILED = {
    "track": '{"error":"ValueError: weather service unavailable for Lima"}',
    "search_spans.json": '{"error":"ValueError: weather service unavailable for Lima"}',
    "langgraph": '{"error":"ValueError(\'weather service unavailable for Lima\')"}',
}
"""The failed call's result, as each producer keeps the exception."""


@pytest.mark.parametrize("form", ["track", "langgraph", "search_spans.json"])
def test_opik_exports_read_as_their_traces(form: str, tmp_path: Path) -> None:
    assert scored(DATA / form, tmp_path) == weather_traces(FAILED[form])


@pytest.mark.parametrize("form", ["track", "langgraph"])
def test_a_trace_has_the_tags_it_was_logged_with(form: str, tmp_path: Path) -> None:
    # OpikTracer's node spans carry no tags: the trace's are what the tracer was given
    found = scored(DATA / form, tmp_path, "SELECT list_sort(tags) FROM traces")
    assert found == [(["capture", "weather"],)] * 3


def test_a_trace_logged_without_spans_is_quarantined_not_lost(tmp_path: Path) -> None:
    """A trace with no span (Opik's `client.trace(...)` alone) is read as its own run, which
    has no step: each is quarantined as an empty trajectory, and the run that scored nothing
    exits 1."""
    source = tmp_path / "export"
    source.mkdir()
    for path in sorted((DATA / "track").glob("trace_*.json")):
        document = json.loads(path.read_text())
        document["spans"] = []
        (source / path.name).write_text(json.dumps(document, indent=2))
    db = tmp_path / "t.duckdb"
    assert main(["score", str(source), "--db", str(db), "--no-embedder"]) == 1
    found = query_rows(db, "SELECT rule, count(*) FROM quarantine GROUP BY rule")
    assert found == [("empty_trajectory", 3)]
