"""A DuckLake whose catalog is a PostgreSQL server (started here on 127.0.0.1 from Debian's
`postgresql` package) holds the scores of a run fanned out to two Dask workers, which commit
their own shards of its rows; they equal a local run into one file."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from storage.duckdb_store import DuckDBStore
from transforms.synth.traces import synthetic_traces

N_TRACES = 300


def _postgres_bin(name: str) -> str:
    found = shutil.which(name) or next(
        (str(p) for p in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))), None
    )
    if found is None:
        pytest.skip(
            f"{name} not found: PostgreSQL is not installed (make test installs Debian's "
            "postgresql when run as root; or apt-get install postgresql)"
        )
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    """A PostgreSQL server on 127.0.0.1 for this module; its libpq connection string. As root
    it runs as the `postgres` user (the server refuses root)."""
    folder = Path(tempfile.mkdtemp(prefix="tg-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = folder / "data", _free_port()
    subprocess.run(
        [*as_user, _postgres_bin("initdb"), "-D", str(data), "-A", "trust", "-U", "tg"],
        check=True,
        capture_output=True,
    )
    server = subprocess.Popen(
        [
            *as_user,
            _postgres_bin("postgres"),
            "-D",
            str(data),
            "-p",
            str(port),
            "-h",
            "127.0.0.1",
            "-k",
            str(folder),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    dsn = f"dbname=postgres user=tg host=127.0.0.1 port={port}"
    try:
        deadline = time.monotonic() + 30
        while (
            subprocess.run(
                [_postgres_bin("pg_isready"), "-h", "127.0.0.1", "-p", str(port)],
                capture_output=True,
            ).returncode
            != 0
        ):
            assert time.monotonic() < deadline and server.poll() is None, "postgres did not start"
            time.sleep(0.2)
        yield dsn
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)


def _latest(db: str) -> pl.DataFrame:
    with DuckDBStore(db, read_only=True) as store:
        return store.sql(
            "SELECT trace_id, novelty, novelty_window, complexity, tool_diversity, "
            "outcome_confidence, score, shareable FROM latest_scores ORDER BY trace_id"
        )


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_server")
def test_a_postgres_catalog_holds_a_run_of_two_dask_workers(postgres: str, tmp_path: Path) -> None:
    from pipelines.flows import score_traces

    export = tmp_path / "traces.parquet"
    synthetic_traces(N_TRACES, seed=9).with_columns(pl.col("steps").list.head(2)).write_parquet(
        export
    )
    config = tmp_path / "dask.toml"
    config.write_text(
        '[execution]\nengine = "dask"\nworkers = 2\nembed_chunk_texts = 90\n'
        "novelty_partition_rows = 70\ncommit_batch_rows = 100\n"
    )
    lake = f"ducklake:postgres:{postgres}"
    DuckDBStore(lake, data_path=str(tmp_path / "lake-data")).close()
    distributed = score_traces([str(export)], db=lake, config=str(config))
    local = score_traces([str(export)], db=str(tmp_path / "local.duckdb"))

    assert distributed.counts["rows_scored"] == local.counts["rows_scored"] == N_TRACES
    assert "embed and replay (dask)" in distributed.timings
    # The workers committed the run's rows themselves, three shards of scores and three of
    # traces, each a DuckLake snapshot naming the worker process; this process published.
    assert distributed.counts["commit_shards"] == 6
    with DuckDBStore(lake, read_only=True) as store:
        messages = store.sql(
            f"SELECT commit_message FROM \"{store._alias}\".snapshots() "
            "WHERE commit_message LIKE 'shard %'"
        )["commit_message"].to_list()
    writers = {message.rsplit(" ", 1)[1] for message in messages}
    assert len(messages) == 6 and str(os.getpid()) not in writers
    assert len(writers) == distributed.counts["commit_writers"] >= 1
    assert sorted(p.suffix for p in (tmp_path / "lake-data").rglob("*.parquet"))  # data there
    on_lake, on_file = _latest(lake), _latest(str(tmp_path / "local.duckdb"))
    assert on_lake["trace_id"].to_list() == on_file["trace_id"].to_list()
    assert (on_lake["novelty"] - on_file["novelty"]).abs().max() <= 1e-6  # type: ignore[operator]
    same = ["novelty_window", "complexity", "tool_diversity", "outcome_confidence", "shareable"]
    assert on_lake.select(same).equals(on_file.select(same))
