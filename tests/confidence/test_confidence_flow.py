"""The real flows: the nightly score_traces with its confidence step, confidence_traces, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import query_rows

from tracegrade.cli import main
from tracegrade.cli.exits import EXIT_NOTHING_SCORED, EXIT_OK, EXIT_USAGE
from tracegrade.demo import write_demo_archive


def test_nightly_flow_levels_the_demo_archive_and_summarises_them(
    prefect_server: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pipelines.flows import confidence_traces, score_traces

    archive = tmp_path / "archive"
    write_demo_archive(archive, n_traces=400, days=4, seed=11)
    db = tmp_path / "demo.duckdb"
    summary = score_traces([str(archive)], db=str(db), no_embedder=True)
    assert summary.status == "completed"
    levels = dict(query_rows(db, "SELECT level, count(*) FROM confidence_traces GROUP BY level"))
    ((traces,),) = query_rows(db, "SELECT count(*) FROM traces")
    assert sum(levels.values()) == traces == summary.counts["rows_scored"]
    assert summary.counts["confidence_traces"] == traces
    assert "## Intervention levels (derived confidence)" in summary.markdown
    for level, count in levels.items():
        assert f"| {level} | {count:,} | {count / traces:.1%} |" in summary.markdown
    assert summary.levels is not None and summary.levels["traces"].sum() == traces

    report = confidence_traces(db=str(db))
    assert report.counts == {"rows_scored": 0, "rows_unchanged": traces}

    factors = tmp_path / "factors.jsonl"
    rows = [
        {"trace_id": "x", "step_index": 0, "tool_calls": 1, "tool_successes": 1},
        {"trace_id": "y", "step_index": 0, "tool_calls": 1, "tool_successes": 2},
    ]
    factors.write_text("".join(json.dumps(r) + "\n" for r in rows))
    status = main(["confidence", "--db", str(db), "--factors", str(factors), "--no-embedder"])
    out = capsys.readouterr().out
    assert status == EXIT_OK
    assert "| traces given a level in this run | 1 |" in out
    # x: tool success 1/1 alone -> 1.0; no sources given (source_count 0) and self-confidence
    # at its default .5 < .8 -> GRACE's no_sources x0.7 -> 0.7, NOTIFY
    assert "| NOTIFY | 1 | 100.0% |" in out
    assert "| successes_exceed_calls | 1 | tool_successes 2 exceeds tool_calls 1 |" in out
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"trace_id": "z", "step_index": 0, "llm_self_eval": 2.0}) + "\n")
    status = main(["confidence", "--db", str(db), "--factors", str(bad), "--no-embedder"])
    assert status == EXIT_NOTHING_SCORED
    assert "every factor row was quarantined" in capsys.readouterr().err
    assert query_rows(
        db,
        "SELECT flow, status, rows_scored, rows_quarantined FROM runs "
        "WHERE flow = 'confidence_traces' ORDER BY run_seq",
    ) == [
        ("confidence_traces", "completed", 0, None),
        ("confidence_traces", "completed", 1, 1),
        ("confidence_traces", "completed", 0, 1),
    ]


def test_cli_refuses_bad_thresholds_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "confidence.toml"
    config.write_text("[confidence.thresholds]\nsilent = 0.5\nnotify = 0.6\n")
    status = main(["confidence", "--db", str(tmp_path / "x.duckdb"), "--config", str(config)])
    assert status == EXIT_USAGE
    assert "thresholds must be strictly descending" in capsys.readouterr().err
    assert not (tmp_path / "x.duckdb").exists()


def test_derived_levels_in_parts_equal_one_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Derived mode scores stored traces a chunk at a time (bounded memory); the levels and
    step scores it stores do not depend on the chunk size."""
    from pipelines import confidence_stages

    archive = tmp_path / "archive"
    write_demo_archive(archive, n_traces=120, days=2, seed=5)
    tables = {}
    for chunk in (1_000_000, 7):
        monkeypatch.setattr(confidence_stages, "DERIVED_CHUNK_TRACES", chunk)
        db = tmp_path / f"chunk{chunk}.duckdb"
        assert main(["score", str(archive), "--db", str(db), "--no-embedder"]) == EXIT_OK
        tables[chunk] = (
            query_rows(
                db, "SELECT trace_id, level, aggregate, reason FROM confidence_traces ORDER BY 1"
            ),
            query_rows(
                db, "SELECT trace_id, step_index, score FROM confidence_steps ORDER BY 1, 2"
            ),
        )
    assert len(tables[7][0]) > 7 * 3
    assert tables[7] == tables[1_000_000]


def test_a_level_missing_outside_the_running_run_is_still_found(tmp_path: Path) -> None:
    """Derived mode compares only the traces of unfinished runs when counts show that no
    other trace can lack a current level; a level lost elsewhere is still found and written."""
    import duckdb

    archive = tmp_path / "archive"
    write_demo_archive(archive, n_traces=60, days=1, seed=9)
    db = tmp_path / "t.duckdb"
    assert main(["score", str(archive), "--db", str(db), "--no-embedder"]) == EXIT_OK
    before = query_rows(db, "SELECT trace_id, level FROM confidence_traces ORDER BY 1")
    con = duckdb.connect(str(db))
    con.execute(
        "DELETE FROM confidence_trace_rows WHERE trace_id IN "
        "(SELECT trace_id FROM confidence_traces ORDER BY trace_id LIMIT 5)"
    )
    con.close()
    assert main(["confidence", "--db", str(db)]) == EXIT_OK
    assert query_rows(db, "SELECT trace_id, level FROM confidence_traces ORDER BY 1") == before
    assert main(["confidence", "--db", str(db)]) == EXIT_OK
    ((runs,),) = query_rows(
        db, "SELECT count(*) FROM runs WHERE flow = 'confidence_traces' AND rows_scored = 0"
    )
    assert runs == 1
