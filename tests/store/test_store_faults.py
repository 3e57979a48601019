"""Faults of the machine and the store, through the real CLI: one line, exit 4, a rerun that
completes once the fault is gone (issue 47; docs/operating.md, "Faults").

A full disk is a small tmpfs the test mounts (this needs root, as the project's machines and
CI run; elsewhere the test says why it cannot run)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from conftest import query_rows, table_snapshot
from postgres_server import PostgresServer

from storage.store.duckdb_store import DuckDBStore
from storage.store.faults import describe_fault
from transforms.synth.traces import synthetic_traces, to_json_records

TRACEGRADE = str(Path(sys.executable).with_name("tracegrade"))
IDENTITY = ("run_id", "run_seq")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    return subprocess.run(
        [TRACEGRADE, *args],
        env=env | {"PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
        check=False,
    )


def _contents(db: Path) -> dict[str, list[str]]:
    return table_snapshot(
        db,
        exclude=("runs", "meta"),
        leave_out=lambda column: column in IDENTITY or column.endswith("_at"),
    )


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB tmpfs, grown to 200 MB when the test calls `grow`."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1M", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _grow(mount: Path) -> None:
    subprocess.run(["mount", "-o", "remount,size=200M", str(mount)], check=True)


def test_a_full_disk_is_one_line_and_exit_4_and_a_rerun_with_space_completes(
    tmp_path: Path, small_disk: Path
) -> None:
    export = tmp_path / "day.jsonl"
    records = to_json_records(synthetic_traces(3000, seed=3))
    export.write_text("".join(json.dumps(record) + "\n" for record in records))
    db = small_disk / "t.duckdb"

    full = _run("score", str(export), "--db", str(db), "--no-embedder")

    assert full.returncode == 4, full.stderr[-3000:]
    lines = full.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in full.stderr, full.stderr[-3000:]
    assert lines[0].startswith(f"tracegrade: the disk holding {small_disk} is full (")

    _grow(small_disk)
    rerun = _run("score", str(export), "--db", str(db), "--no-embedder")
    clean = _run("score", str(export), "--db", str(tmp_path / "clean.duckdb"), "--no-embedder")

    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert clean.returncode == 0, clean.stderr[-3000:]
    statuses = query_rows(db, "SELECT status FROM runs ORDER BY run_seq")
    assert statuses[0][0] in ("failed", "interrupted") and statuses[-1] == ("completed",)
    assert _contents(db) == _contents(tmp_path / "clean.duckdb")


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (OSError(28, "No space left on device"), "the disk holding"),
        (
            duckdb.OutOfMemoryException("Out of Memory Error: failed to pin block"),
            "the store's DuckDB ran out of its memory limit (Out of Memory Error: failed",
        ),
        (RuntimeError("IO Error: Connection refused"), None),  # not a store error: a bug
    ],
)
def test_only_faults_of_the_store_are_said_in_one_line(error: Exception, said: str | None) -> None:
    line = describe_fault(error, "t.duckdb")

    assert (line is None) if said is None else (line is not None and line.startswith(said))


def test_a_postgres_catalog_lost_without_a_reason_is_said_unreachable() -> None:
    with socket.socket() as probe:  # a port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    lake = f"ducklake:postgres:dbname=postgres host=127.0.0.1 port={port}"
    error = duckdb.Error('Failed to execute query "ROLLBACK": ')

    line = describe_fault(error, lake)

    assert line is not None and line.startswith(
        f"the DuckLake catalog is unreachable at 127.0.0.1:{port}"
    )


def _latest(db: str) -> list[tuple[object, ...]]:
    with DuckDBStore(db, read_only=True) as store:
        return store.sql(
            "SELECT trace_id, novelty, complexity, tool_diversity, outcome_confidence, score "
            "FROM latest_scores ORDER BY trace_id"
        ).rows()


@pytest.mark.slow
def test_the_postgres_catalog_stopped_mid_run_is_one_line_and_exit_4_and_a_rerun_completes(
    tmp_path: Path,
) -> None:
    export = tmp_path / "day.jsonl"
    records = to_json_records(synthetic_traces(6000, seed=5))
    export.write_text("".join(json.dumps(record) + "\n" for record in records))
    server = PostgresServer()
    try:
        server.start()
        lake = f"ducklake:postgres:{server.dsn}"
        args = ["score", str(export), "--db", lake, "--data-path", str(tmp_path / "lake")]
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        with subprocess.Popen(
            [TRACEGRADE, *args, "--no-embedder"],
            env=env | {"PYTHONUNBUFFERED": "1"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
        ) as run:
            assert run.stderr is not None
            said = []
            for line in run.stderr:  # once the run is scoring, its catalog goes away
                said.append(line)
                if "scoring:" in line:
                    server.stop(immediately=True)
                    break
            said += run.stderr.readlines()
            assert run.wait(timeout=300) == 4, "".join(said)[-3000:]
        faults = [line for line in said if line.startswith("tracegrade:")]
        assert len(faults) == 1 and not any("Traceback" in line for line in said), said
        assert faults[0].startswith(
            f"tracegrade: the DuckLake catalog is unreachable at 127.0.0.1:{server.port}"
        )

        server.start()
        rerun = _run(*args, "--no-embedder")
        assert rerun.returncode == 0, rerun.stderr[-3000:]
        clean = _run("score", str(export), "--db", str(tmp_path / "clean.duckdb"), "--no-embedder")
        assert clean.returncode == 0, clean.stderr[-3000:]
        assert _latest(lake) == _latest(str(tmp_path / "clean.duckdb"))
    finally:
        server.close()


def _scored(tmp_path: Path, db: str) -> Path:
    export = tmp_path / "day.jsonl"
    records = to_json_records(synthetic_traces(300, seed=2))
    export.write_text("".join(json.dumps(record) + "\n" for record in records))
    done = _run("score", str(export), "--db", db, "--no-embedder")
    assert done.returncode == 0, done.stderr[-3000:]
    return export


def _three_commands(
    db: str, export: Path, tmp_path: Path
) -> list[tuple[str, subprocess.CompletedProcess[str]]]:
    return [
        ("report", _run("report", "--db", db, "--out", str(tmp_path / "r.html"))),
        ("sql", _run("sql", "--db", db, "SELECT count(*) FROM latest_scores")),
        ("score", _run("score", str(export), "--db", db, "--no-embedder", "--force")),
    ]


@pytest.mark.parametrize("damage", ["deleted", "truncated"])
def test_a_damaged_ducklake_data_file_is_one_line_from_report_sql_and_score(
    tmp_path: Path, damage: str
) -> None:
    db = f"ducklake:sqlite:{tmp_path / 'meta.sqlite'}"
    export = _scored(tmp_path, db)
    victim = next((tmp_path / "meta.sqlite.files").rglob("trace_rows/*.parquet"))
    if damage == "deleted":
        victim.unlink()
    else:
        victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])

    for command, done in _three_commands(db, export, tmp_path):
        assert done.returncode == 4, (command, done.stderr[-3000:])
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and str(victim) in lines[0], (command, done.stderr[-3000:])
        assert lines[0].startswith(f"tracegrade: the store {db} is damaged: data file")
    assert not (tmp_path / "r.html").exists()  # no page counted around the hole


def test_a_cut_short_duckdb_file_is_one_line_from_report_sql_and_score(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    export = _scored(tmp_path, str(db))
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])

    for command, done in _three_commands(str(db), export, tmp_path):
        assert done.returncode == 4, (command, done.stderr[-3000:])
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, (command, done.stderr[-3000:])
        assert lines[0].startswith(f"tracegrade: database {db} is a DuckDB file that cannot be")


def test_the_next_run_removes_the_data_files_a_killed_commit_left(tmp_path: Path) -> None:
    db = f"ducklake:sqlite:{tmp_path / 'meta.sqlite'}"
    export = _scored(tmp_path, db)
    kept = sorted((tmp_path / "meta.sqlite.files").rglob("*.parquet"))
    # what a run killed inside a commit leaves: its files, named in no snapshot
    orphans = [
        folder / f"ducklake-0000{number}-killed.parquet"
        for number, folder in enumerate(sorted({path.parent for path in kept}))
    ]
    for orphan, source in zip(orphans, kept, strict=False):
        orphan.write_bytes(source.read_bytes())

    rerun = _run("score", str(export), "--db", db, "--no-embedder", "--force")

    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert not [orphan for orphan in orphans if orphan.exists()]
    assert all(path.exists() for path in kept)
    assert _run("sql", "--db", db, "SELECT count(*) FROM latest_scores").stdout.split() == [
        "count_star()",
        "300",
    ]


def test_a_sqlite_catalog_locked_by_another_process_is_one_line_at_start_and_mid_run(
    tmp_path: Path,
) -> None:
    """Another process's write transaction on the SQLite catalog (here a `BEGIN EXCLUSIVE`
    of Python's sqlite3): held when a run starts, exit 3 as for a DuckDB file in use; held
    from the middle of a run until it gives up, exit 4 and one line; either way a rerun once
    it is free completes and equals a clean run."""
    import sqlite3

    export = tmp_path / "day.jsonl"
    records = to_json_records(synthetic_traces(6000, seed=6))
    export.write_text("".join(json.dumps(record) + "\n" for record in records))
    catalog = tmp_path / "lake" / "meta.sqlite"
    lake = f"ducklake:sqlite:{catalog}"
    args = [TRACEGRADE, "score", str(export), "--db", lake, "--no-embedder"]
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env |= {"PYTHONUNBUFFERED": "1", "TRACEGRADE_LOCK_WAIT_S": "1"}
    DuckDBStore(lake).close()  # the lake exists
    holder = sqlite3.connect(catalog, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        refused = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
        holder.execute("ROLLBACK")
        assert refused.returncode == 3, refused.stderr[-3000:]
        assert refused.stderr.count("\n") == 1 and "is locked by another process" in refused.stderr

        with subprocess.Popen(
            args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        ) as run:
            assert run.stderr is not None
            said = []
            for line in run.stderr:  # once the run is scoring, another process takes the catalog
                said.append(line)
                if "scoring:" in line:
                    holder.execute("BEGIN EXCLUSIVE")
                    break
            said += run.stderr.readlines()
            assert run.wait(timeout=300) == 4, "".join(said)[-3000:]
        holder.execute("ROLLBACK")
    finally:
        holder.close()
    faults = [line for line in said if line.startswith("tracegrade:")]
    assert len(faults) == 1 and not any("Traceback" in line for line in said), said
    assert "the DuckLake catalog stayed locked by another process" in faults[0]

    rerun = _run("score", str(export), "--db", lake, "--no-embedder")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    clean = _run("score", str(export), "--db", str(tmp_path / "clean.duckdb"), "--no-embedder")
    assert clean.returncode == 0, clean.stderr[-3000:]
    assert _latest(lake) == _latest(str(tmp_path / "clean.duckdb"))


class _LockedAtFirst:
    """A store's connection whose first `failures` statements fail as SQLite answered a
    DuckLake's read under load on 2026-12-06 (at once, whatever its busy timeout); the rest
    go to the real connection."""

    def __init__(self, con: duckdb.DuckDBPyConnection, failures: int) -> None:
        self._con, self.failures, self.failed = con, failures, 0

    def __getattr__(self, name: str) -> object:
        real = getattr(self._con, name)
        if name not in ("execute", "sql", "register"):
            return real

        def statement(*args: object, **kwargs: object) -> object:
            if self.failed < self.failures:
                self.failed += 1
                raise duckdb.Error(
                    "Failed to query most recent snapshot for DuckLake: database is locked"
                )
            return real(*args, **kwargs)

        return statement


@pytest.mark.parametrize("catalog", ["sqlite", None])
def test_a_read_that_sqlite_answers_locked_at_once_is_tried_again_outside_a_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, catalog: str | None
) -> None:
    """Two of two loaded suites failed a run of three at once on one SQLite-catalog DuckLake:
    a read as a DuckLake transaction began ("Failed to query most recent snapshot") was
    answered "database is locked" at once. Such a read is tried again until the lock wait
    ends: it did nothing, so nothing is doubled. Inside a transaction it is not (the
    transaction is over), nor on a DuckDB file, whose lock DuckDB holds."""
    import polars as pl

    db = f"ducklake:sqlite:{tmp_path / 'meta.sqlite'}" if catalog else str(tmp_path / "one.duckdb")
    monkeypatch.setenv("TRACEGRADE_LOCK_WAIT_S", "5")
    ids = pl.DataFrame({"trace_id": ["a", "b"]})
    query = "SELECT count(*) AS n FROM traces t SEMI JOIN __ids USING (trace_id)"
    with DuckDBStore(db) as store:
        store.sql("SELECT 1")  # attached
        flaky = _LockedAtFirst(store._raw, failures=3)
        store._raw = flaky  # type: ignore[assignment]
        if catalog:
            assert store.sql_with(query, ids=ids)["n"].to_list() == [0]
            assert flaky.failed == 3
            # the run's staging side registers frames too, which reads the lake's catalog
            flaky.failures, flaky.failed = 2, 0
            store.scratch.create_temp_table("staged", ids.clear())
            assert flaky.failed == 2
            assert store.scratch.sql_with("SELECT count(*) AS n FROM __ids", ids=ids)["n"][0] == 2
        else:
            with pytest.raises(duckdb.Error, match="database is locked"):
                store.sql_with(query, ids=ids)
            assert flaky.failed == 1
        flaky.failures, flaky.failed = 1, 0
        with store.held(), pytest.raises(duckdb.Error, match="database is locked"):
            store.columns("scores")
        assert flaky.failed == 1
        store._raw = flaky._con


def test_a_read_answered_locked_for_longer_than_the_lock_wait_fails_as_a_locked_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tries end with the lock wait (TRACEGRADE_LOCK_WAIT_S), and the fault is the locked
    catalog's one line."""
    import time

    db = f"ducklake:sqlite:{tmp_path / 'meta.sqlite'}"
    monkeypatch.setenv("TRACEGRADE_LOCK_WAIT_S", "0.5")
    with DuckDBStore(db) as store:
        store.sql("SELECT 1")
        flaky = _LockedAtFirst(store._raw, failures=10**6)
        store._raw = flaky  # type: ignore[assignment]
        began = time.monotonic()
        with pytest.raises(duckdb.Error) as failed:
            store.columns("scores")
        waited = time.monotonic() - began
        store._raw = flaky._con
    assert 0.5 <= waited < 3 and flaky.failed > 2
    said = describe_fault(failed.value, db)
    assert said is not None and said.startswith("the DuckLake catalog stayed locked")


def test_an_attach_that_sqlite_answers_locked_at_once_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attaching a SQLite-catalog DuckLake reads its catalog, and SQLite may answer that read
    "database is locked" at once as it does the others: the attach is tried again until the
    lock wait ends (a failed ATTACH attaches nothing), then fails as a locked catalog."""
    import time

    from storage.errors import StoreLockedError
    from storage.store._connection import attach
    from storage.store._extensions import load_extension

    db = f"ducklake:sqlite:{tmp_path / 'meta.sqlite'}"
    DuckDBStore(db).close()  # the lake exists
    monkeypatch.setenv("TRACEGRADE_LOCK_WAIT_S", "5")
    con = duckdb.connect()
    try:
        for name in ("ducklake", "sqlite_scanner"):
            load_extension(con, name)
        flaky = _LockedAtFirst(con, failures=2)
        attach(flaky, db, "lake", read_only=True)  # type: ignore[arg-type]
        assert flaky.failed == 2
        assert con.sql("SELECT count(*) FROM lake.traces").fetchone() == (0,)
        con.execute("USE memory")
        con.execute("DETACH lake")
        monkeypatch.setenv("TRACEGRADE_LOCK_WAIT_S", "0.5")
        flaky = _LockedAtFirst(con, failures=10**6)
        began = time.monotonic()
        with pytest.raises(StoreLockedError, match="is locked by another process"):
            attach(flaky, db, "lake", read_only=True)  # type: ignore[arg-type]
        assert 0.5 <= time.monotonic() - began < 3 and flaky.failed > 2
    finally:
        con.close()


def test_a_lock_wait_under_a_second_still_waits_for_the_sqlite_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SQLite of DuckDB's extension waits for a locked catalog in whole seconds, and not
    at all for a busy timeout under 1,000 ms (measured: 999 ms failed at once, 1,000 waited a
    second): a lock wait of 0.5 s is rounded up, so a statement inside a transaction waits out
    another process's short write (0.3 s here) instead of failing at once."""
    import time

    db = f"ducklake:sqlite:{tmp_path / 'meta.sqlite'}"
    DuckDBStore(db).close()  # the lake exists
    monkeypatch.setenv("TRACEGRADE_LOCK_WAIT_S", "0.5")
    hold = (
        "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
        "c.execute('BEGIN EXCLUSIVE'); print('held', flush=True); time.sleep(0.3); "
        "c.execute('ROLLBACK')"
    )
    with (
        DuckDBStore(db) as store,
        subprocess.Popen(
            [sys.executable, "-c", hold, str(tmp_path / "meta.sqlite")],
            stdout=subprocess.PIPE,
            text=True,
        ) as holder,
    ):
        store.sql("SELECT 1")  # attached
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        began = time.monotonic()
        with store.transaction() as con:
            assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)
        assert time.monotonic() - began >= 0.2
        assert holder.wait(timeout=30) == 0


@pytest.mark.parametrize("catalog", ["sqlite", None])
def test_a_transaction_that_sqlite_answers_locked_as_it_begins_starts_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, catalog: str | None
) -> None:
    """A transaction on a SQLite-catalog DuckLake reads its snapshot first; answered "database
    is locked" at once there, it starts over (nothing is written yet) until the lock wait
    ends, and what it writes is written once. On a DuckDB file nothing is tried again."""
    db = f"ducklake:sqlite:{tmp_path / 'meta.sqlite'}" if catalog else str(tmp_path / "one.duckdb")
    monkeypatch.setenv("TRACEGRADE_LOCK_WAIT_S", "5")
    with DuckDBStore(db) as store:
        store.sql("SELECT 1")  # attached
        flaky = _LockedAtFirst(store._raw, failures=3)
        store._raw = flaky  # type: ignore[assignment]
        if catalog:
            store.begin_run("score", version="t", model=None, config={}, config_hash="h")
            assert flaky.failed == 3
        else:
            with pytest.raises(duckdb.Error, match="database is locked"):
                store.begin_run("score", version="t", model=None, config={}, config_hash="h")
            assert flaky.failed == 1
        store._raw = flaky._con
        assert store.sql("SELECT count(*) AS n FROM runs")["n"].to_list() == [1 if catalog else 0]
