"""Phoenix's and MLflow's own exports score with no flag (tests/data/SOURCES.md: the scripted
agent of scripts/_scripted_agent.py traced into a real Phoenix server and by MLflow's tracing;
Phoenix's spans exported as the REST API's page, the client's span list, and the spans
dataframe as Parquet and JSON lines; MLflow's traces as `Trace.to_json()` objects in an array
and one a line, and one trace's span data as the tracking store keeps it). Before, the REST page
was refused as an unknown object and the span list read as three empty trajectories: Phoenix
writes the OpenInference kind as `span_kind` beside the attributes and the status as
`status_code`, which were not read; from Parquet, a tool's arguments came back with the other
tools' argument names as nulls. MLflow's traces were refused: no format took them."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from conftest import query_rows

from pipelines.otel_import import import_otel
from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
FILES = {
    "phoenix/phoenix-rest-spans.json": 3,
    "phoenix/phoenix-spans.json": 3,
    "phoenix/phoenix-spans-dataframe.jsonl": 3,
    "phoenix/phoenix-spans-dataframe.parquet": 3,
    "mlflow/mlflow-traces.json": 3,
    "mlflow/mlflow-traces.jsonl": 3,
    "mlflow/traces.json": 1,
}
"""Each file and how many of the agent's three runs it holds."""

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
def test_each_export_scores_the_agent_s_runs_as_it_ran_them(tmp_path: Path, name: str) -> None:
    db = tmp_path / "export.duckdb"
    assert main(["score", str(DATA / name), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT status, rows_scored FROM files") == [("loaded", FILES[name])]
    rows = query_rows(db, TRACE_SQL)
    if FILES[name] == 1:
        assert [row[0] for row in rows] == ["When was invoice INV-404 paid?"]
    else:
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
    assert len(failed_reason) == 1 and "invoice INV-404 not found" in str(failed_reason[0][0])


@pytest.mark.parametrize(("pattern", "failed"), [(None, 1), ("", 0)])
def test_a_tool_result_that_says_error_with_status_ok_is_a_failed_call(
    tmp_path: Path, pattern: str | None, failed: int
) -> None:
    """Frameworks that catch a tool's exception hand its message back as the result with
    status OK; the default `tool_error_pattern` reads it as the failure it is, an empty one
    leaves the status alone to say."""
    rows = [
        json.loads(line)
        for line in (DATA / "phoenix" / "phoenix-spans-dataframe.jsonl").read_text().splitlines()
    ]
    for row in rows:
        if row["status_code"] == "ERROR" and row["span_kind"] == "TOOL":
            row.update(status_code="OK", status_message="", events=[])
            row["attributes.output.value"] = "Error: invoice INV-404 not found"
    export = tmp_path / "spans.jsonl"
    export.write_text("".join(json.dumps(row) + "\n" for row in rows))
    options = {} if pattern is None else {"tool_error_pattern": pattern}

    import_otel([str(export)], str(tmp_path / "t.parquet"), options=options)

    trace = pl.read_parquet(tmp_path / "t.parquet").filter(
        pl.col("task").struct.field("objective") == "When was invoice INV-404 paid?"
    )
    steps = trace["steps"][0].to_list()
    calls = [step for step in steps if (step["tool"] or {}).get("name") == "lookup_invoice"]
    retried = ["tool_call", "error_recovery"] if failed else ["tool_call", "tool_call"]
    assert [step["type"] for step in calls] == retried
    errors = [step for step in calls if str(step["output_summary"]).startswith('{"error"')]
    assert len(errors) == failed
