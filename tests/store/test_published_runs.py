"""A run writes its rows in batches and publishes them at once: readers between the batches
see the last published state whole, and the rows of a run that never publishes go."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from conftest import query_rows, run_pipeline

from storage.schema.scoring import latest_scores_select
from storage.store.commit import hashed_on_ids
from storage.store.duckdb_store import DuckDBStore
from transforms.synth.traces import synthetic_traces

N = 300

LOOK = (
    "SELECT (SELECT count(*) FROM score_rows), (SELECT count(*) FROM latest_scores), "
    "(SELECT count(DISTINCT run_id) FROM latest_scores), (SELECT count(*) FROM traces), "
    "(SELECT count(DISTINCT run_id) FROM traces)"
)


@pytest.fixture
def days(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Two exports of the same N trace ids with different content, and a configuration that
    commits 40 rows per transaction."""
    first = synthetic_traces(N, seed=3)
    second = synthetic_traces(N, seed=4).with_columns(id=first["id"])
    paths = tmp_path / "day1.parquet", tmp_path / "day2.parquet"
    first.write_parquet(paths[0])
    second.write_parquet(paths[1])
    config = tmp_path / "tracegrade.toml"
    config.write_text("[execution]\ncommit_batch_rows = 40\n")
    return paths[0], paths[1], config


def test_readers_between_a_run_s_batches_see_the_previous_run_whole(
    days: tuple[Path, Path, Path], db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    day1, day2, config = days
    run_pipeline([day1], db_path, config, embed=False)
    seen: list[tuple[Any, ...]] = []
    release = DuckDBStore.release

    def release_and_look(store: DuckDBStore) -> None:
        release(store)
        if not store._attached:  # the file was let go: another process could read it now
            seen.append(query_rows(db_path, LOOK)[0])

    monkeypatch.setattr(DuckDBStore, "release", release_and_look)
    monkeypatch.setattr("storage.store._connection.HOLD_BUDGET_S", 0.0)  # let go before every batch
    monkeypatch.setattr("storage.store.duckdb_store.YIELD_S", 0.01)
    counts = run_pipeline([day2], db_path, config, embed=False)
    assert counts["rows_changed"] == N
    partial = [look for look in seen if N < look[0] < 2 * N]
    assert len(partial) >= 5, seen  # the run's scores went in batch by batch
    for look in seen:
        # Before publication: the first run's N scores and traces, and nothing of the second.
        assert look[1:] == (N, 1, N, 1) or look[0] == 2 * N, seen
    after = query_rows(db_path, LOOK + ", (SELECT count(*) FROM trace_rows)")[0]
    assert after == (2 * N, N, 1, N, 1, N)  # the replaced versions of the traces are gone
    (latest_run,) = query_rows(db_path, "SELECT DISTINCT run_id FROM latest_scores")
    (second_run,) = query_rows(db_path, "SELECT run_id FROM runs WHERE run_seq = 2")
    assert latest_run == second_run


def test_a_run_that_fails_before_publishing_leaves_none_of_its_rows(
    days: tuple[Path, Path, Path], db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    day1, _, config = days

    def fail(*_: object, **__: object) -> None:
        raise RuntimeError("the disk filled up")

    with monkeypatch.context() as patch:
        patch.setattr("storage.store.publishing.publish", fail)
        with pytest.raises(RuntimeError, match="disk filled"):
            run_pipeline([day1], db_path, config, embed=False)
    left = "SELECT (SELECT count(*) FROM trace_rows), (SELECT count(*) FROM score_rows)"
    assert query_rows(db_path, left) == [(0, 0)]
    assert query_rows(db_path, "SELECT status FROM runs") == [("failed",)]
    assert run_pipeline([day1], db_path, config, embed=False)["rows_new"] == N


def test_the_rows_of_a_killed_run_go_when_the_next_run_finds_it(db_path: Path) -> None:
    with DuckDBStore(db_path) as store:
        killed = store.begin_run(
            "score_traces", version="t", model=None, config={}, config_hash="h"
        )
        store.execute(
            "INSERT INTO score_rows BY NAME SELECT 't1' AS trace_id, ? AS run_id, 1 AS run_seq, "
            "'h' AS content_hash, now() AS created_at, 's' AS scope_key, 'p' AS profile, "
            "1 AS n_steps, 1 AS unique_types, 0 AS error_recovery, 0 AS unique_tools, "
            "0 AS complexity, 0 AS novelty, 0 AS tool_diversity, 0 AS outcome_confidence, "
            "0 AS w_complexity, 0 AS w_novelty, 0 AS w_tool_diversity, "
            "0 AS w_outcome_confidence, 0 AS score, [] AS overrides, 'x' AS novelty_source, "
            "0 AS novelty_window, false AS shareable, 'c' AS config_hash",
            [killed.run_id],
        )
        assert store.sql("SELECT count(*) FROM scores").item() == 0  # not published
        assert store.close_interrupted_runs(lambda run_id: False) == [killed.run_id]
        assert store.sql("SELECT count(*) FROM score_rows").item() == 0


def test_sql_as_of_run_shows_the_scores_as_they_were_after_that_run(
    days: tuple[Path, Path, Path], db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tracegrade.cli.app import main

    day1, day2, config = days
    run_pipeline([day1], db_path, config, embed=False)
    run_pipeline([day2], db_path, config, embed=False)
    query = "SELECT count(*) AS n, min(run_seq) AS lo, max(run_seq) AS hi FROM latest_scores"
    shown = {}
    for as_of in ("1", "2"):
        assert main(["sql", query, "--db", str(db_path), "--as-of-run", as_of]) == 0
        shown[as_of] = capsys.readouterr().out.splitlines()
    assert shown["1"] == ["n,lo,hi", "300,1,1"]
    assert shown["2"] == ["n,lo,hi", "300,2,2"]
    assert main(["sql", query, "--db", str(db_path), "--as-of-run", "7"]) == 2
    assert "no published run has that number (the last published: 1, 2" in capsys.readouterr().err


def test_a_commit_batch_that_fails_leaves_the_join_optimizer_on() -> None:
    """The trace batches turn DuckDB's choice of a join's build side off; publishing needs it
    back on, also on a connection whose batch failed."""

    def off(con: duckdb.DuckDBPyConnection) -> str:
        ((value,),) = con.execute("SELECT current_setting('disabled_optimizers')").fetchall()
        return str(value)

    con = duckdb.connect()
    try:
        with pytest.raises(duckdb.CatalogException), hashed_on_ids(con):
            assert off(con) == "build_side_probe_side"
            con.execute("INSERT INTO trace_rows SELECT 1")
        assert off(con) == ""
    finally:
        con.close()


def test_level_step_rows_commit_in_larger_batches_than_the_traces_levels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A level commit writes a trace's level rows in the store's batches and its step rows,
    about ten a trace and a few numbers each, in batches of `STEP_BATCH_ROWS` (here with both
    sizes made small), and every row is stored once."""
    from pipelines.score import score_traces

    monkeypatch.setattr("storage.store.publishing.COMMIT_BATCH_ROWS", 50)
    monkeypatch.setattr("storage.confidence.store.STEP_BATCH_ROWS", 200)
    batches: Counter[str] = Counter()
    batch = DuckDBStore.batch

    @contextlib.contextmanager
    def counted(store: DuckDBStore, name: str, *args: Any, **kwargs: Any) -> Iterator[Any]:
        batches[name] += 1
        with batch(store, name, *args, **kwargs) as con:
            yield con

    monkeypatch.setattr(DuckDBStore, "batch", counted)
    export, db = tmp_path / "day.parquet", tmp_path / "levels.duckdb"
    synthetic_traces(N, seed=8).write_parquet(export)
    assert score_traces([str(export)], db=str(db), no_embedder=True).status == "completed"
    ((levels, steps, pairs),) = query_rows(
        db,
        "SELECT (SELECT count(*) FROM confidence_trace_rows), "
        "(SELECT count(*) FROM confidence_step_rows), "
        "(SELECT count(DISTINCT (trace_id, step_index)) FROM confidence_step_rows)",
    )
    assert levels == N and steps == pairs > 4 * 200
    assert batches["confidence_trace_rows"] == -(-N // 50)
    assert batches["confidence_step_rows"] == -(-steps // 200)


WINDOW = latest_scores_select("scores")
"""Each trace's newest published score as the history gives it (what `latest_scores` was as a
view until schema 7)."""


def _latest_as_the_history_gives_it(db_path: Path) -> int:
    """Asserts that `latest_scores` (the table the runs keep) holds the rows the score history's
    window gives, no more, no fewer; returns how many."""
    missing = query_rows(
        db_path, f"SELECT trace_id, run_seq FROM ({WINDOW} EXCEPT ALL SELECT * FROM latest_scores)"
    )
    extra = query_rows(
        db_path, f"SELECT trace_id, run_seq FROM (SELECT * FROM latest_scores EXCEPT ALL {WINDOW})"
    )
    assert (missing, extra) == ([], [])
    (count,) = query_rows(db_path, "SELECT count(*) FROM latest_scores")[0]
    return int(count)


def test_latest_scores_follow_every_kind_of_run(
    days: tuple[Path, Path, Path], db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New traces, all of them changed, some changed back beside new ones, a forced re-read,
    and a run that fails before it publishes: after each, `latest_scores` is what the score
    history says, with the run's rows written in batches of 40."""
    day1, day2, config = days
    run_pipeline([day1], db_path, config, embed=False)
    assert _latest_as_the_history_gives_it(db_path) == N
    run_pipeline([day2], db_path, config, embed=False)
    assert _latest_as_the_history_gives_it(db_path) == N
    mixed = tmp_path / "mixed.parquet"
    back = synthetic_traces(N, seed=3).head(50)
    fresh = synthetic_traces(30, seed=9).with_columns(id=pl.format("new-{}", pl.col("id")))
    pl.concat([back, fresh], how="vertical_relaxed").write_parquet(mixed)
    counts = run_pipeline([mixed], db_path, config, embed=False)
    assert (counts["rows_changed"], counts["rows_new"]) == (50, 30)
    assert _latest_as_the_history_gives_it(db_path) == N + 30
    run_pipeline([day2], db_path, config, embed=False, force=True)
    assert _latest_as_the_history_gives_it(db_path) == N + 30
    newest = query_rows(db_path, "SELECT max(run_seq), count(DISTINCT run_seq) FROM latest_scores")

    def fail(*_: object, **__: object) -> None:
        raise RuntimeError("the disk filled up")

    with monkeypatch.context() as patch:
        patch.setattr("storage.store.publishing.publish", fail)
        with pytest.raises(RuntimeError, match="disk filled"):
            run_pipeline([day1], db_path, config, embed=False, force=True)
    assert _latest_as_the_history_gives_it(db_path) == N + 30
    assert (
        query_rows(db_path, "SELECT max(run_seq), count(DISTINCT run_seq) FROM latest_scores")
        == newest
    )
    run_pipeline([day1], db_path, config, embed=False, force=True)  # discards the failed run's rows
    assert _latest_as_the_history_gives_it(db_path) == N + 30
    unpublished = (
        "SELECT count(*) FROM latest_score_rows WHERE run_id NOT IN (SELECT run_id FROM scores)"
    )
    assert query_rows(db_path, unpublished) == [(0,)]
