"""The scoring stages end to end on real files and a real DuckDB file (without Prefect)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from conftest import SEED_TRACE, run_pipeline, table_snapshot


def write_jsonl(path: Path, traces: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(trace) + "\n" for trace in traces))
    return path


def trace(i: int, **changes: Any) -> dict[str, Any]:
    t = copy.deepcopy(SEED_TRACE)
    t["id"] = f"kp:trace:{i:04d}"
    t["metadata"]["created_at"] = f"2026-01-05T{i // 60 % 24:02d}:{i % 60:02d}:00Z"
    t["metadata"]["agent_id"] = f"agent-{i % 3}"
    t["task"]["objective"] = f"Review PR #{i} for {['security', 'style', 'tests'][i % 3]} issues"
    for key, value in changes.items():
        t[key] = value
    return t


def query(db: Path, sql: str) -> pl.DataFrame:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.sql(sql).pl()
    finally:
        con.close()


def test_seed_trace_without_embedder_scores_0_66875(tmp_path: Path, db_path: Path) -> None:
    run_pipeline([write_jsonl(tmp_path / "seed.jsonl", [SEED_TRACE])], db_path, embed=False)
    row = query(db_path, "SELECT * FROM latest_scores").row(0, named=True)
    assert row["score"] == pytest.approx(0.66875, abs=1e-15)
    assert row["novelty"] == 0.5
    assert row["novelty_source"] == "no_embedder"
    assert row["profile"] == "default"
    assert row["overrides"] == []
    assert row["shareable"] is False


def test_latest_scores_has_the_documented_columns(tmp_path: Path, db_path: Path) -> None:
    run_pipeline([write_jsonl(tmp_path / "a.jsonl", [trace(1)])], db_path, embed=False)
    columns = set(query(db_path, "SELECT * FROM latest_scores").columns)
    assert {
        "trace_id",
        "created_at",
        "agent_id",
        "task_domain",
        "profile",
        "complexity",
        "novelty",
        "tool_diversity",
        "outcome_confidence",
        "score",
        "overrides",
        "novelty_source",
        "shareable",
        "run_id",
    } <= columns
    types = dict(
        duckdb.connect(str(db_path), read_only=True)
        .sql(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'scores'"
        )
        .fetchall()
    )
    assert types["created_at"] == "TIMESTAMP WITH TIME ZONE"


def test_rerunning_the_same_input_changes_nothing_but_the_runs_log(
    tmp_path: Path, db_path: Path
) -> None:
    files = [
        write_jsonl(tmp_path / "a.jsonl", [trace(i) for i in range(30)]),
        write_jsonl(tmp_path / "b.jsonl", [trace(i) for i in range(25, 40)] + [{"id": "x"}]),
    ]
    (tmp_path / "c.jsonl").write_text("not json\n")
    run_pipeline([tmp_path], db_path)
    before = table_snapshot(db_path)
    assert len(before["score_rows"]) == 40
    again = run_pipeline([tmp_path], db_path)
    assert again["files_skipped"] == 3 and again["rows_read"] == 0
    forced = run_pipeline(files + [tmp_path / "c.jsonl"], db_path, force=True)
    assert forced["rows_unchanged"] == 40 and forced["rows_new"] == 0
    assert table_snapshot(db_path) == before
    assert query(db_path, "SELECT count(*) AS n FROM runs")["n"][0] == 3


def test_every_file_balances_read_scored_quarantined(tmp_path: Path, db_path: Path) -> None:
    good = [trace(i) for i in range(10)]
    bad = [trace(100), trace(101), trace(102)]
    bad[0]["outcome"]["confidence"] = 1.5
    bad[1]["id"] = None
    bad[2]["metadata"]["success"] = None
    write_jsonl(tmp_path / "mixed.jsonl", good + bad + [good[0]])
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    counts = run_pipeline([tmp_path], db_path, embed=False)
    files = query(db_path, "SELECT * FROM files ORDER BY path")
    assert (files["rows_read"] == files["rows_scored"] + files["rows_quarantined"]).all()
    assert files.filter(pl.col("path").str.ends_with("mixed.jsonl"))["rows_quarantined"][0] == 4
    assert sorted(files.filter(pl.col("status") == "quarantined")["rule"].to_list()) == [
        "empty_file",
        "unreadable_file",
    ]
    rules = query(db_path, "SELECT rule, count(*) AS n FROM quarantine GROUP BY rule ORDER BY rule")
    assert dict(rules.iter_rows()) == {
        "duplicate_id": 1,
        "empty_file": 1,
        "invalid_confidence": 1,
        "missing_id": 1,
        "missing_success": 1,
        "unreadable_file": 1,
    }
    # one count model: rows read = valid + quarantined, files read = loaded + quarantined whole
    # (the empty and the unreadable file read no row: their quarantine rows are theirs alone)
    assert counts["rows_read"] == counts["rows_valid"] + counts["rows_quarantined"]
    assert counts["files_read"] == 3 and counts["files_quarantined"] == 2


def test_changed_content_replaces_the_trace_and_adds_a_score(tmp_path: Path, db_path: Path) -> None:
    run_pipeline([write_jsonl(tmp_path / "day1.jsonl", [trace(1), trace(2)])], db_path, embed=False)
    changed = trace(2)
    changed["outcome"]["confidence"] = 0.1
    counts = run_pipeline([write_jsonl(tmp_path / "day2.jsonl", [changed])], db_path, embed=False)
    assert counts["rows_changed"] == 1
    stored = query(db_path, "SELECT confidence FROM traces WHERE trace_id = 'kp:trace:0002'")
    assert stored["confidence"].to_list() == [0.1]
    latest = query(
        db_path, "SELECT outcome_confidence FROM latest_scores WHERE trace_id = 'kp:trace:0002'"
    )
    assert latest["outcome_confidence"].to_list() == [0.1]
    assert query(db_path, "SELECT count(*) AS n FROM scores")["n"][0] == 3


def test_zero_steps_and_huge_traces_are_scored(tmp_path: Path, db_path: Path) -> None:
    empty = trace(1, steps=[])
    huge = trace(2)
    huge["task"]["objective"] = "x" * 1_000_000
    huge["steps"] = [
        {
            "step_id": i,
            "type": ["thought", "tool_call", "observation"][i % 3],
            "content": f"step {i}",
            **({"tool": {"name": f"tool-{i % 7}"}} if i % 3 == 1 else {}),
        }
        for i in range(10_000)
    ]
    run_pipeline([write_jsonl(tmp_path / "a.jsonl", [empty, huge])], db_path)
    scores = query(
        db_path, "SELECT trace_id, n_steps, complexity FROM latest_scores ORDER BY trace_id"
    )
    assert scores["n_steps"].to_list() == [0, 10_000]
    assert scores["complexity"].to_list()[0] == 0.0


def test_config_errors_stop_before_any_work(tmp_path: Path, db_path: Path) -> None:
    from transforms.errors import ConfigError

    config = tmp_path / "bad.toml"
    config.write_text(
        "[scoring.profiles.finance]\ncomplexity = 0.2\nnovelty = 0.25\n"
        "tool_diversity = 0.1\noutcome_confidence = 0.4\n"
    )
    with pytest.raises(ConfigError, match="'finance' sum to 0.95, expected 1.0"):
        run_pipeline([write_jsonl(tmp_path / "a.jsonl", [trace(1)])], db_path, config)
    assert not db_path.exists()


def test_duplicates_are_found_across_read_batches(
    tmp_path: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines import staging as stages
    from transforms.synth.traces import synthetic_traces

    traces = synthetic_traces(40, seed=8)
    traces = pl.concat([traces, traces.slice(0, 5)])
    traces.write_parquet(tmp_path / "dups.parquet")
    batches: list[int] = []
    writer = stages._BatchWriter

    class CountingWriter(writer):  # type: ignore[misc, valid-type]
        def __call__(self, frame: pl.DataFrame) -> None:
            batches.append(frame.height)
            super().__call__(frame)

    monkeypatch.setattr(stages, "DEFAULT_BATCH_ROWS", 7)
    monkeypatch.setattr(stages, "_BatchWriter", CountingWriter)
    small = run_pipeline([tmp_path / "dups.parquet"], db_path, embed=False)
    assert len(batches) == 7
    assert small["rows_read"] == 45 and small["rows_valid"] == 40 and small["rows_quarantined"] == 5
    kept = query(db_path, "SELECT trace_id, row_number FROM traces ORDER BY row_number")
    assert kept.height == 40 and kept["row_number"].max() == 45


@pytest.mark.parametrize("scope", ["agent", "global", "success"])
def test_late_traces_are_counted_without_the_embedder(
    tmp_path: Path, db_path: Path, scope: str
) -> None:
    """A trace older than the newest stored one of its scope counts as late; without the
    embedder the plan reads one newest time per scope, not every stored trace."""
    config = tmp_path / "tracegrade.toml"
    config.write_text(f'[novelty]\nscope = "{scope}"\n')
    day1 = [trace(i) for i in range(10, 20)]
    run_pipeline([write_jsonl(tmp_path / "day1.jsonl", day1)], db_path, config, embed=False)
    # traces 1-3 come before every stored trace of their agent; 40 and 41 after all of them
    day2 = [trace(i) for i in (1, 2, 3, 40, 41)]
    counts = run_pipeline(
        [write_jsonl(tmp_path / "day2.jsonl", day2)], db_path, config, embed=False
    )
    assert counts["rows_new"] == 5
    assert counts["rows_late"] == 3


def test_a_file_that_yields_no_trace_is_quarantined_not_loaded(
    tmp_path: Path, db_path: Path
) -> None:
    """Never silent (issue 40): a file read without error that holds no record was recorded
    as loaded with 0 rows, and later runs skipped it; it is quarantined with what it holds."""
    (tmp_path / "blank.jsonl").write_text("\n   \n\n")
    run_pipeline([tmp_path / "blank.jsonl"], db_path, embed=False)
    files = query(db_path, "SELECT status, rule FROM files")
    assert files.rows() == [("quarantined", "no_records")]
    reason = query(db_path, "SELECT reason FROM quarantine")["reason"][0]
    assert "yields no trace: it holds only blank lines (read as trace files" in reason
