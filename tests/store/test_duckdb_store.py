"""The DuckDB store: one writer, clear lock errors, UTC, idempotent loads."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from conftest import query_rows

from storage.errors import StoreDamaged, StoreLockedError, StoreOpenError
from storage.schema import SCHEMA_VERSION
from storage.store._connection import UNKNOWN_JOINS_S, YIELD_S
from storage.store.duckdb_store import DuckDBStore
from transforms.synth.traces import synthetic_traces

HOLD = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == "ro")
print("held", flush=True)
time.sleep(60)
"""

NOW = str(SCHEMA_VERSION)
"""The schema version a writer stamps."""


def hold(db: Path, mode: str) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(db), mode], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


@pytest.mark.parametrize("mode", ["rw", "ro"])
def test_a_second_process_fails_fast_naming_the_file_and_the_holder(
    db_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACEGRADE_LOCK_WAIT_S", "0")
    DuckDBStore(db_path).close()
    holder = hold(db_path, mode)
    try:
        started = time.perf_counter()
        with pytest.raises(StoreLockedError) as raised:
            DuckDBStore(db_path)
        assert time.perf_counter() - started < 10
        message = str(raised.value)
        assert str(db_path) in message and f"PID {holder.pid}" in message
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    with DuckDBStore(db_path) as store:
        assert store.sql("SELECT count(*) AS n FROM runs")["n"][0] == 0


@pytest.mark.parametrize("mode", ["rw", "ro"])
def test_a_writer_waits_for_a_holder_that_lets_go_and_says_who_held_it(
    db_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRACEGRADE_LOCK_WAIT_S", "60")
    DuckDBStore(db_path).close()
    holder = hold(db_path, mode)
    release = threading.Timer(1.5, holder.kill)
    release.start()
    try:
        started = time.perf_counter()
        with DuckDBStore(db_path) as store:
            waited = time.perf_counter() - started
            assert store.sql("SELECT count(*) AS n FROM runs")["n"][0] == 0
    finally:
        release.cancel()
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    assert 1.0 < waited < 30
    said = capsys.readouterr().err
    assert f"database {db_path} is in use by PID {holder.pid}" in said and "waiting" in said


def test_a_writer_gives_up_after_the_wait_naming_the_holder(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACEGRADE_LOCK_WAIT_S", "1.5")
    DuckDBStore(db_path).close()
    holder = hold(db_path, "rw")
    try:
        started = time.perf_counter()
        with pytest.raises(StoreLockedError, match=r"waited 2 s for it \(TRACEGRADE_LOCK_WAIT_S\)"):
            DuckDBStore(db_path)
        assert 1.4 < time.perf_counter() - started < 10
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()


@pytest.mark.parametrize("value", ["soon", "-1", "nan"])
def test_a_lock_wait_that_is_not_seconds_is_one_clear_error(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("TRACEGRADE_LOCK_WAIT_S", value)
    with pytest.raises(StoreOpenError, match="TRACEGRADE_LOCK_WAIT_S.*not a number of seconds"):
        DuckDBStore(db_path)


def test_session_time_zone_is_utc(db_path: Path) -> None:
    with DuckDBStore(db_path) as store:
        assert store.sql("SELECT current_setting('TimeZone') AS tz")["tz"][0] == "UTC"


def test_query_results_stream_into_one_frame_with_duckdb_s_column_names(db_path: Path) -> None:
    # Results are converted in batches (RESULT_BATCH_ROWS); the frame must be what DuckDB's
    # own export gives: every row in order, repeated names suffixed, an empty result typed.
    query = "SELECT range AS a, range * 2 AS a, 'x' AS a_1 FROM range(250000)"
    with DuckDBStore(db_path) as store:
        frame = store.sql(query)
        empty = store.sql("SELECT 1::BIGINT AS n, 'x' AS s WHERE false")
    expected = duckdb.sql(query).pl()
    assert frame.columns == expected.columns == ["a", "a_1", "a_1_1"]
    assert frame.equals(expected)
    assert empty.height == 0 and empty.schema == pl.Schema({"n": pl.Int64, "s": pl.String})


def test_runs_get_increasing_sequence_numbers(db_path: Path) -> None:
    with DuckDBStore(db_path) as store:
        first = store.begin_run("x", version="0", model=None, config={}, config_hash="h")
        second = store.begin_run("x", version="0", model=None, config={}, config_hash="h")
        assert (first.run_seq, second.run_seq) == (1, 2)
        assert store.sql("SELECT status FROM runs")["status"].to_list() == ["running", "running"]


def test_embeddings_are_stored_once_and_read_back_in_order(db_path: Path) -> None:
    import numpy as np

    with DuckDBStore(db_path) as store:
        vectors = np.arange(12, dtype=np.float32).reshape(3, 4)
        store.put_embeddings(["a", "b", "c"], vectors, model="m", run_id="r1")
        store.put_embeddings(["a"], vectors[:1] + 100, model="m", run_id="r2")
        assert store.sql("SELECT count(*) AS n FROM embeddings")["n"][0] == 3
        assert store.missing_embeddings(pl.Series(["c", "d", "d"])).to_list() == ["d"]
        back = store.vectors(pl.Series(["c", "a", "c"]))
        assert np.array_equal(back, vectors[[2, 0, 2]])
        with pytest.raises(LookupError):
            store.vectors(pl.Series(["zzz"]))


def test_a_failed_transaction_leaves_nothing(db_path: Path) -> None:
    with DuckDBStore(db_path) as store:
        with pytest.raises(RuntimeError), store.transaction() as con:
            con.execute("INSERT INTO meta VALUES ('k', 'v')")
            raise RuntimeError("boom")
        assert store.sql("SELECT count(*) AS n FROM meta WHERE key = 'k'")["n"][0] == 0


def test_an_empty_file_left_by_a_killed_first_run_is_started_afresh(db_path: Path) -> None:
    db_path.write_bytes(b"")
    with DuckDBStore(db_path) as store:
        assert store.sql("SELECT count(*) AS n FROM runs")["n"][0] == 0


def as_schema_2(db_path: Path) -> duckdb.DuckDBPyConnection:
    """The tracegrade file `db_path` (made if missing) laid out as schema 2 had it: `traces`,
    `scores`, `confidence_traces` and `confidence_steps` tables and no `runs.published_at` or
    `levels_published_at`, every row kept (the caller closes the returned connection)."""
    DuckDBStore(db_path).close()
    con = duckdb.connect(str(db_path))
    for view in ("latest_scores", "traces", "scores", "confidence_traces", "confidence_steps"):
        con.execute(f"DROP VIEW {view}")
    con.execute("DROP TABLE latest_score_rows")
    for table in ("trace", "score", "confidence_trace", "confidence_step"):
        con.execute(f"ALTER TABLE {table}_rows RENAME TO {table}s")
    con.execute("ALTER TABLE runs DROP COLUMN published_at")
    con.execute("ALTER TABLE runs DROP COLUMN levels_published_at")
    con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    return con


def test_a_schema_2_file_keeps_every_run_s_rows_under_the_same_names(
    db_path: Path, tmp_path: Path
) -> None:
    export = tmp_path / "export.parquet"
    synthetic_traces(300, seed=5).write_parquet(export)
    from tracegrade.cli.app import main

    assert main(["score", str(export), "--db", str(db_path), "--no-embedder"]) == 0
    query = "SELECT trace_id, score, run_seq FROM latest_scores ORDER BY trace_id"
    before = query_rows(db_path, query)
    as_schema_2(db_path).close()
    with DuckDBStore(db_path) as store:
        assert store.sql("SELECT value FROM meta WHERE key = 'schema_version'").item() == NOW
        assert store.sql("SELECT count(*) FROM traces").item() == 300
        assert store.sql("SELECT count(*) FROM runs WHERE published_at IS NULL").item() == 0
        levels = store.sql("SELECT count(*) FROM confidence_traces").item()
        assert levels == len(before)  # derived confidence's levels stay published too
    assert query_rows(db_path, query) == before


def test_a_schema_1_file_loses_its_pre_grace_confidence_rows_and_gets_the_new_steps(
    db_path: Path,
) -> None:
    con = as_schema_2(db_path)
    con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    con.execute("DROP TABLE confidence_steps")
    con.execute("CREATE TABLE confidence_steps (trace_id VARCHAR, penalty DOUBLE NOT NULL)")
    con.execute("INSERT INTO confidence_steps VALUES ('t', 0.2)")
    con.execute(
        "INSERT INTO confidence_traces VALUES ('t', 'derived', 'h', 'c', 1, 0.5, 'weighted', "
        "'CONFIRM', 'r', 'a', [], 'run', now())"
    )
    con.close()
    with DuckDBStore(db_path) as store:
        columns = store.sql("DESCRIBE confidence_steps")["column_name"].to_list()
        assert "penalty" not in columns and "llm_self_confidence" in columns
        assert store.sql("SELECT count(*) AS n FROM confidence_traces")["n"][0] == 0
        version = store.sql("SELECT value FROM meta WHERE key = 'schema_version'")["value"][0]
        assert version == NOW


def test_a_schema_3_file_takes_traces_whose_outcome_is_unknown(db_path: Path) -> None:
    DuckDBStore(db_path).close()
    con = duckdb.connect(str(db_path))
    con.execute("ALTER TABLE trace_rows ALTER COLUMN success SET NOT NULL")
    con.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    con.close()
    with DuckDBStore(db_path) as store:
        (nullable,) = store.rows(
            "SELECT is_nullable FROM information_schema.columns "
            "WHERE table_name = 'trace_rows' AND column_name = 'success'"
        )[0]
        assert nullable == "YES"
        assert store.rows("SELECT value FROM meta WHERE key = 'schema_version'") == [(NOW,)]


@pytest.mark.parametrize(
    ("version", "dropped", "field", "value"),
    [
        ("4", ("agent_version", "tags"), "agent_version", "2.1.0"),
        ("5", ("tags",), "tags", ["canary"]),
    ],
    ids=["schema-4-takes-agent-versions", "schema-5-takes-tags"],
)
def test_an_older_file_keeps_its_traces_and_takes_the_newer_field(
    db_path: Path, tmp_path: Path, version: str, dropped: tuple[str, ...], field: str, value: Any
) -> None:
    """A file stamped before a column of `trace_rows` existed gains it when a run opens it:
    its traces stay (null in the new column) and the run's trace fills it."""
    export = tmp_path / "export.jsonl"
    synthetic_traces(2, seed=5).write_ndjson(export)
    traces = [json.loads(line) for line in export.read_text().splitlines()]
    from tracegrade.cli.app import main

    assert main(["score", str(export), "--db", str(db_path), "--no-embedder"]) == 0
    con = duckdb.connect(str(db_path))
    for column in dropped:
        con.execute(f"ALTER TABLE trace_rows DROP COLUMN {column}")
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [version])
    con.close()
    tagged = tmp_path / "tagged.jsonl"
    traces[0]["id"] = "tagged"
    traces[0]["metadata"][field] = value
    tagged.write_text(json.dumps(traces[0]) + "\n")
    assert main(["score", str(tagged), "--db", str(db_path), "--no-embedder"]) == 0
    found = query_rows(db_path, f"SELECT trace_id, {field} FROM traces ORDER BY trace_id")
    assert len(found) == 3
    assert dict(found)["tagged"] == value
    assert [v for t, v in found if t != "tagged"] == [None, None]
    assert query_rows(db_path, "SELECT value FROM meta WHERE key = 'schema_version'") == [(NOW,)]


def test_a_writer_runs_the_schema_ddl_only_when_the_file_was_stamped_by_other_ddl(
    tmp_path: Path,
) -> None:
    """The DDL's views are rewritten when the stamped SCHEMA_SQL differs (a new tracegrade
    version), and left alone when it is the same (no catalog change to checkpoint)."""
    db_path = tmp_path / "s.duckdb"
    DuckDBStore(db_path).close()

    def drop_view(stamp: str | None) -> None:
        con = duckdb.connect(str(db_path))
        con.execute("DROP VIEW latest_scores")
        if stamp is not None:
            con.execute("UPDATE meta SET value = ? WHERE key = 'schema_sql'", [stamp])
        con.close()

    def has_view() -> bool:
        with DuckDBStore(db_path) as store:
            views = store.sql("SELECT view_name FROM duckdb_views() WHERE NOT internal")
            return "latest_scores" in views["view_name"].to_list()

    drop_view(stamp="the DDL of an older version")
    assert has_view()
    drop_view(stamp=None)
    assert not has_view()


def test_a_corrupt_file_is_one_clear_error_at_once_not_a_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB's error about a corrupt file speaks of a 'block': that is not a lock to wait for."""
    monkeypatch.setenv("TRACEGRADE_LOCK_WAIT_S", "60")
    path = tmp_path / "corrupt.duckdb"
    DuckDBStore(path).close()
    data = bytearray(path.read_bytes())
    data[12:20] = (999).to_bytes(8, "little")  # the header's version, its checksum now wrong
    path.write_bytes(bytes(data))
    started = time.monotonic()
    with pytest.raises(StoreDamaged, match="is a DuckDB file that cannot be read.*checksum"):
        DuckDBStore(path)
    assert time.monotonic() - started < 5


def test_a_file_of_a_newer_duckdb_says_how_to_move_it() -> None:
    from storage.store._connection import _not_duckdb

    text = (
        "IO Error: Trying to read a database file with version number 999, but we can only "
        "read versions between 64 and 68.\nThe database file was created with an newer "
        "version of DuckDB."
    )
    error = _not_duckdb(Path("old.duckdb"), text, duckdb.IOException(text))
    assert "newer DuckDB" in str(error) and "EXPORT DATABASE" in str(error)
    assert "version number 999" in str(error)


def test_a_writer_lets_go_before_a_batch_would_hold_the_file_past_the_budget(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("storage.store._connection.HOLD_BUDGET_S", 1.0)
    with DuckDBStore(db_path) as store:
        store.release()
        store.sql("SELECT 1 AS one")  # let go for less than YIELD_S: no reader got in
        assert len(store.holds.so_far()) == 1  # so the hold went on
        store.release()
        time.sleep(0.35)  # a gap a polling reader gets in at
        for _ in range(6):
            with store.batch("slow") as con:
                con.execute("SELECT 1")
                time.sleep(0.4)
        holds = store.holds.so_far()[1:]
    # Two batches a hold (a third would end past 1 s), each hold followed by a gap, where
    # letting go after every batch would make six holds and never letting go one of 2.4 s.
    assert 3 <= len(holds) <= 4, holds
    assert max(holds) < 1.0 + 0.2, holds


def test_the_first_batch_of_a_kind_joins_a_short_hold_and_waits_for_a_gap_after_a_long_one(
    db_path: Path,
) -> None:
    """A batch of a kind not seen yet (its time unknown) used to wait for a gap whatever the
    hold: a small run slept through five gaps for batches of milliseconds."""
    with DuckDBStore(db_path) as store:
        store.release()
        time.sleep(0.35)  # the store's opening hold ends
        for kind in ("a", "b"):  # the second, of a kind not seen yet, joins the short hold
            with store.batch(kind) as con:
                con.execute("SELECT 1")
        with store.batch("c") as con:  # joins too, and makes the hold long
            con.execute("SELECT 1")
            time.sleep(UNKNOWN_JOINS_S + 0.1)
        started = time.monotonic()
        with store.batch("d") as con:  # first of its kind after a long hold: a gap first
            con.execute("SELECT 1")
        waited = time.monotonic() - started
        holds = store.holds.so_far()
    assert len(holds) == 3, holds  # the opening hold, a-b-c, d
    assert holds[1] > UNKNOWN_JOINS_S and waited >= YIELD_S


def test_a_stop_request_while_the_file_is_attached_is_raised_once_the_store_knows_it(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGINT or SIGTERM can arrive while the store attaches its file between two steps. Raised
    there, it left the file attached to DuckDB while the store thought it was not, so the next
    use failed ("already attached") and the run could not record itself as failed (a rare
    failure of tests/cli/test_signals.py). The stop now waits until the attach is complete."""
    from storage.store import duckdb_store, interrupts

    monkeypatch.setattr(interrupts, "_requested", [])
    monkeypatch.setattr(interrupts, "_raised", [])
    store = DuckDBStore(db_path)
    store.release()
    real = duckdb_store.attach

    def attach_then_stop(*args: Any, **kwargs: Any) -> None:
        real(*args, **kwargs)
        interrupts.interrupt(RuntimeError("stop requested"))  # what the signal handler does

    monkeypatch.setattr(duckdb_store, "attach", attach_then_stop)
    try:
        with pytest.raises(RuntimeError, match="stop requested"):
            store.commits()
        monkeypatch.setattr(duckdb_store, "attach", real)
        assert store.commits() == 0  # the store knows its file is attached: no second attach
        store.release()
        assert store.commits() == 0
    finally:
        store.close()


def test_a_store_draws_no_progress_bar(db_path: Path) -> None:
    """DuckDB's progress bar (drawn on stderr for a statement past 2 s: a schema migration of
    10,000,000 traces drew one) is off on the store's connection."""
    with DuckDBStore(db_path) as store:
        assert store.rows("SELECT current_setting('enable_progress_bar')") == [(False,)]
