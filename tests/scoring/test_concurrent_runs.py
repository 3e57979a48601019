"""Runs and readers on one database file at once (issue 24): a run holds the file only while it
reads or commits, a reader gets its answers during the run and never sees part of one, two runs
started together end as if run one after the other."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from conftest import query_rows, table_snapshot

from pipelines import stages
from pipelines.score import score_traces
from tracegrade.demo import DEMO_START, write_demo_archive
from transforms.synth.traces import synthetic_traces

TRACEGRADE = str(Path(sys.executable).with_name("tracegrade"))
ANSWER = re.compile(r"^(\d+),(\d+),(\d+)$", re.MULTILINE)
"""The answer of `tracegrade sql` into a pipe: CSV."""
IDENTITY = ("run_id", "run_seq")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    return env | {"TRACEGRADE_LOCK_WAIT_S": "120", "PYTHONUNBUFFERED": "1"}


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [TRACEGRADE, *args],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def _finish(process: subprocess.Popen[str]) -> str:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err[-2000:]
    return out


def _contents(db: Path) -> dict[str, list[str]]:
    """Every table but `runs` and `meta`, rows sorted, without the columns that name the run
    or the time it ran."""
    return table_snapshot(
        db,
        exclude=("runs", "meta"),
        leave_out=lambda column: column in IDENTITY or column.endswith("_at"),
    )


def _spans(db: Path) -> list[tuple[Any, ...]]:
    return query_rows(db, "SELECT flow, status, started_at, finished_at FROM runs ORDER BY 3")


def test_a_reader_through_tracegrade_sql_is_answered_during_a_run_and_never_sees_part_of_it(
    tmp_path: Path,
) -> None:
    n = 80_000
    export = tmp_path / "day.parquet"
    synthetic_traces(n, seed=11).write_parquet(export)
    config = tmp_path / "tracegrade.toml"
    config.write_text("[execution]\ncommit_batch_rows = 20000\n")  # four batches, then publish
    db = tmp_path / "live.duckdb"
    query = (
        "SELECT (SELECT count(*) FROM latest_scores) AS scored, "
        "(SELECT count(*) FROM runs WHERE status = 'running') AS running, "
        "(SELECT count(*) FROM runs WHERE status = 'completed') AS completed"
    )
    run = _start("score", str(export), "--db", str(db), "--no-embedder", "--config", str(config))
    answers: list[tuple[int, int, int]] = []
    while run.poll() is None:
        if db.exists():
            asked = subprocess.run(
                [TRACEGRADE, "sql", query, "--db", str(db)],
                env=_env(),
                capture_output=True,
                text=True,
                timeout=180,
                stdin=subprocess.DEVNULL,
            )
            assert asked.returncode == 0, asked.stderr[-2000:]
            match = ANSWER.search(asked.stdout)
            assert match is not None, asked.stdout
            answers.append((int(match[1]), int(match[2]), int(match[3])))
        time.sleep(0.2)
    _finish(run)
    during = [answer for answer in answers if answer[1] == 1]
    assert len(during) >= 3, answers  # the reader got in while the run was running
    assert {scored for scored, _, _ in answers} <= {0, n}  # all of the run or none of it
    assert any(scored == 0 for scored, _, _ in during)
    final = subprocess.run(
        [TRACEGRADE, "sql", query, "--db", str(db)], env=_env(), capture_output=True, text=True
    )
    assert ANSWER.search(final.stdout) is not None
    assert ANSWER.search(final.stdout).groups() == (str(n), "0", "1")  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("archive")
    write_demo_archive(folder, n_traces=30_000, days=4)
    return folder


def test_a_nightly_and_a_backfill_started_together_end_as_one_after_the_other(
    archive: Path, tmp_path: Path
) -> None:
    start, end = DEMO_START.isoformat(), (DEMO_START + timedelta(days=3)).isoformat()
    nightly_file = sorted(archive.glob("traces-*.parquet"))[-1]
    backfill = ("backfill", str(archive), "--start", start, "--end", end, "--no-embedder")
    nightly = ("score", str(nightly_file), "--no-embedder")

    together = tmp_path / "together.duckdb"
    both = [_start(*backfill, "--db", str(together)), _start(*nightly, "--db", str(together))]
    for process in both:
        _finish(process)
    spans = _spans(together)
    night = next(span for span in spans if span[0] == "score_traces")
    archive_run = next(span for span in spans if span[0] == "backfill")
    assert night[2] < archive_run[3] and archive_run[2] < night[3]  # they did overlap
    assert {span[1] for span in spans} == {"completed"}

    one_after_other = tmp_path / "sequential.duckdb"
    _finish(_start(*backfill, "--db", str(one_after_other)))
    _finish(_start(*nightly, "--db", str(one_after_other)))
    assert _contents(together) == _contents(one_after_other)


def test_a_run_whose_plan_went_stale_plans_again_and_commits_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run A plans; run B stores some of the same traces with other content; A's commit finds
    its plan stale, plans again with the file held, and commits after B, as if it had run
    after B."""
    first = synthetic_traces(400, seed=1)
    second = synthetic_traces(400, seed=2).with_columns(id=first["id"])  # same ids, new content
    a_file, b_file = tmp_path / "a.parquet", tmp_path / "b.parquet"
    first.write_parquet(a_file)
    second.head(250).write_parquet(b_file)
    db = tmp_path / "stale.duckdb"
    real_score = stages.score_staged
    other_ran: list[Any] = []

    def score_after_another_run(*args: Any, **kwargs: Any) -> Any:
        if not other_ran:  # between A's plan and its commit, B runs whole
            other_ran.append(None)
            other_ran[0] = score_traces([str(b_file)], db=str(db), no_embedder=True)
        return real_score(*args, **kwargs)

    monkeypatch.setattr(stages, "score_staged", score_after_another_run)
    a = score_traces([str(a_file)], db=str(db), no_embedder=True)
    monkeypatch.setattr(stages, "score_staged", real_score)
    assert a.status == "completed" and other_ran[0].status == "completed"
    assert a.counts["rows_changed"] == 250 and a.counts["rows_new"] == 150

    con = duckdb.connect(str(db), read_only=True)
    try:
        seqs = dict(con.execute("SELECT run_id, run_seq FROM runs").fetchall())
        mismatched = con.execute(
            "SELECT count(*) FROM latest_scores s JOIN traces t USING (trace_id) "
            "WHERE s.content_hash <> t.content_hash"
        ).fetchall()[0][0]
    finally:
        con.close()
    assert seqs[a.run_id] > seqs[other_ran[0].run_id]  # renumbered: A committed last
    assert mismatched == 0

    sequential = tmp_path / "sequential.duckdb"
    score_traces([str(b_file)], db=str(sequential), no_embedder=True)
    score_traces([str(a_file)], db=str(sequential), no_embedder=True)
    assert _contents(db) == _contents(sequential)
