"""Span files that hold no OTLP span, as other people's tools write them (tests/data/SOURCES.md):
each is quarantined with what it holds, and a run that scored nothing exits 1. Before, a JSON
array of spans was 600 "malformed" lines, and the same spans one per line were read as nothing,
the file recorded as loaded and skipped by every later run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
SPANS = DATA / "any-agent" / "OPENAI.json"


def test_a_json_array_of_sdk_spans_is_one_unrecognised_file(tmp_path: Path) -> None:
    shutil.copy(SPANS, tmp_path / "OPENAI.json")
    db = tmp_path / "s.duckdb"
    status = main(["score", str(tmp_path / "OPENAI.json"), "--db", str(db), "--format", "otel"])
    assert status == 1
    ((state, rule),) = query_rows(db, "SELECT status, rule FROM files")
    assert (state, rule) == ("quarantined", "unrecognised_file")
    ((reason,),) = query_rows(db, "SELECT reason FROM quarantine")
    assert "holds a JSON array of 8 objects with keys name, context, kind" in reason
    assert query_rows(db, "SELECT count(*) FROM quarantine") == [(1,)]  # one row, not one a line


def test_the_same_spans_one_per_line_are_each_quarantined_with_the_reason(
    tmp_path: Path,
) -> None:
    spans = json.loads(SPANS.read_text())
    lines = tmp_path / "spans.jsonl"
    lines.write_text("".join(json.dumps(span) + "\n" for span in spans))
    db = tmp_path / "l.duckdb"
    assert main(["score", str(lines), "--db", str(db), "--format", "otel"]) == 1
    rules = query_rows(db, "SELECT rule, count(*) FROM quarantine GROUP BY rule")
    assert rules == [("no_spans", 8)]
    ((reason,),) = query_rows(db, "SELECT reason FROM quarantine WHERE row_number = 1")
    assert "line 1 holds no span (its keys: name, context" in reason
    assert "span.to_json()" in reason
    ((read, quarantined, scored),) = query_rows(
        db, "SELECT rows_read, rows_quarantined, rows_scored FROM files"
    )
    assert (read, quarantined, scored) == (8, 8, 0)
