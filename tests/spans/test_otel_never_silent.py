"""Spans as the OpenTelemetry SDK writes them (`span.to_json()`, here any-agent's
OpenInference spans, tests/data/SOURCES.md) score as written, as one JSON array or one span a
line, with no flag. Before, the array was 600 "malformed" lines, and the same spans one per
line were read as nothing, the file recorded as loaded and skipped by every later run. A line
that holds no span at all is still quarantined with its reason, never dropped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
SPANS = DATA / "any-agent" / "OPENAI.json"
OBJECTIVE = "what's a good brewery near Aspinwall PA? Write the answer to /projects/hi.txt"
TRACE_SQL = (
    "SELECT objective, result_summary, success, agent_id, "
    "list_transform(list_filter(steps, s -> s.type = 'tool_call'), s -> s.tool_name) "
    "FROM traces"
)


def score(path: Path, db: Path, *flags: str) -> int:
    return main(["score", str(path), "--db", str(db), "--no-embedder", *flags])


@pytest.mark.parametrize("flags", [(), ("--format", "otel")])
def test_a_json_array_of_sdk_spans_is_one_trace(tmp_path: Path, flags: tuple[str, ...]) -> None:
    shutil.copy(SPANS, tmp_path / "OPENAI.json")
    db = tmp_path / "s.duckdb"
    assert score(tmp_path / "OPENAI.json", db, *flags) == 0
    assert query_rows(db, "SELECT status, rows_read, rows_scored FROM files") == [("loaded", 1, 1)]
    ((objective, answer, success, agent, tools),) = query_rows(db, TRACE_SQL)
    assert objective == OBJECTIVE
    assert answer.startswith("I have written the information about a good brewery")
    assert success is True  # every span's status is OK
    # Its resource's service.name is the SDK's default, unknown_service, which names no agent;
    # OpenInference names it in its AGENT span's name (the run's is the SDK's workflow).
    assert agent == "any_agent"
    # The file's two TOOL spans, in the order they started.
    assert tools == ["search_web", "write_file"]


def test_the_same_spans_one_per_line_give_the_same_trace_and_score(tmp_path: Path) -> None:
    spans = json.loads(SPANS.read_text())
    lines = tmp_path / "spans.jsonl"
    lines.write_text("".join(json.dumps(span) + "\n" for span in spans))
    shutil.copy(SPANS, tmp_path / "OPENAI.json")
    one, other = tmp_path / "l.duckdb", tmp_path / "a.duckdb"
    assert score(lines, one) == 0
    assert score(tmp_path / "OPENAI.json", other) == 0
    sql = f"SELECT * FROM ({TRACE_SQL}), (SELECT score FROM latest_scores)"
    assert query_rows(one, sql) == query_rows(other, sql)


def test_a_line_that_holds_no_span_is_quarantined_with_its_keys(tmp_path: Path) -> None:
    spans = json.loads(SPANS.read_text())
    lines = tmp_path / "spans.jsonl"
    lines.write_text(
        "".join(json.dumps(span) + "\n" for span in spans) + json.dumps({"foo": 1}) + "\n"
    )
    db = tmp_path / "q.duckdb"
    assert score(lines, db, "--format", "otel") == 0
    ((rule, reason),) = query_rows(db, "SELECT rule, reason FROM quarantine")
    assert rule == "malformed_record" and "line 9 is neither a row of a Phoenix span" in reason
    ((read, quarantined, scored),) = query_rows(
        db, "SELECT rows_read, rows_quarantined, rows_scored FROM files"
    )
    assert (read, quarantined, scored) == (2, 1, 1)


def test_an_invalid_span_is_quarantined_saying_which_check_it_failed(tmp_path: Path) -> None:
    spans = json.loads(SPANS.read_text())
    tools = [span for span in spans if span["name"] in ("search_web", "write_file")]
    tools[0]["context"]["span_id"] = "0xnot-an-id"
    del tools[1]["start_time"]
    lines = tmp_path / "spans.jsonl"
    lines.write_text("".join(json.dumps(span) + "\n" for span in spans))
    db = tmp_path / "i.duckdb"
    assert score(lines, db, "--format", "otel") == 0
    reasons = sorted(
        reason
        for (reason,) in query_rows(db, "SELECT reason FROM quarantine WHERE rule = 'invalid_span'")
    )
    assert len(reasons) == 2
    assert "'search_web' has no valid span id (missing, or not an 8-byte id), so" in reasons[0]
    assert "'write_file' has no start time, so it cannot be placed" in reasons[1]
    assert not any("trace id" in reason for reason in reasons)
