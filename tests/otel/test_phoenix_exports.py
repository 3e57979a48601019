"""Phoenix's own exports score with no flag (tests/data/SOURCES.md: an agent's run traced into
a real Phoenix server by scripts/phoenix_export.py, its spans exported as the REST API's page,
the client's span list, and the spans dataframe as Parquet and JSON lines). Before, the REST
page was refused as an unknown object and the span list read as three empty trajectories:
Phoenix writes the OpenInference kind as `span_kind` beside the attributes and the status as
`status_code`, which were not read. From Parquet, a tool's arguments came back with the other
tools' argument names as nulls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "phoenix"
FILES = [
    "phoenix-rest-spans.json",
    "phoenix-spans.json",
    "phoenix-spans-dataframe.jsonl",
    "phoenix-spans-dataframe.parquet",
]

# objective -> the answer, the tool calls (name, arguments) in order, how many failed
EXPECTED = {
    "What is the capital of France?": ("Paris is the capital of France.", [], 0),
    "What is the weather in Lisbon?": (
        "It is 21 C and sunny in Lisbon.",
        [("get_weather", {"city": "Lisbon"})],
        0,
    ),
    "When was invoice INV-404 paid?": (
        "Invoice INV-0404 was paid on 3 March.",
        [
            ("lookup_invoice", {"invoice_id": "INV-404"}),
            ("lookup_invoice", {"invoice_id": "INV-0404"}),
        ],
        1,
    ),
}

TRACE_SQL = (
    "SELECT objective, result_summary, "
    "list_transform(list_filter(steps, s -> s.tool_present), s -> [s.tool_name, s.input]), "
    "list_transform(list_filter(steps, s -> s.tool_present), s -> s.type), "
    "len(list_filter(steps, s -> s.output_summary LIKE '{\"error\"%')), success, agent_id "
    "FROM traces ORDER BY objective"
)


@pytest.mark.parametrize("name", FILES)
def test_each_phoenix_export_scores_its_three_traces_as_the_agent_ran_them(
    tmp_path: Path, name: str
) -> None:
    db = tmp_path / "phoenix.duckdb"
    assert main(["score", str(DATA / name), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT status, rows_scored FROM files") == [("loaded", 3)]
    rows = query_rows(db, TRACE_SQL)
    assert [row[0] for row in rows] == sorted(EXPECTED)
    for objective, answer, calls, kinds, failed, success, agent in rows:
        wanted_answer, wanted_calls, wanted_failed = EXPECTED[str(objective)]
        assert answer == wanted_answer
        assert [(tool, json.loads(arguments)) for tool, arguments in calls] == wanted_calls  # type: ignore[union-attr]
        assert failed == wanted_failed, objective
        # the call after the failed one is its retry
        assert kinds == ["tool_call", "error_recovery"][: len(wanted_calls)]
        assert success is True  # every root span ended with status OK
        assert agent == "support-agent"  # the AGENT span's name
    failed_reason = query_rows(
        db,
        "SELECT s.output_summary FROM (SELECT unnest(steps) s FROM traces) "
        "WHERE s.output_summary LIKE '{\"error\"%'",
    )
    assert failed_reason == [('{"error":"invoice INV-404 not found"}',)]
