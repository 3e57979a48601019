"""A DuckLake whose catalog is a PostgreSQL server (started here on 127.0.0.1 from Debian's
`postgresql` package) holds the scores of a run fanned out to two Dask workers, which commit
their own shards of its rows; they equal a local run into one file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from postgres_server import PostgresServer

from storage.store.duckdb_store import DuckDBStore
from storage.store.locations import locate
from transforms.synth.traces import synthetic_traces

N_TRACES = 300


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    """A PostgreSQL server on 127.0.0.1 for this module; its libpq connection string."""
    server = PostgresServer()
    try:
        server.start()
        yield server.dsn
    finally:
        server.close()


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
            f'SELECT commit_message FROM "{store._alias}".snapshots() '
            "WHERE commit_message LIKE 'shard %'"
        )["commit_message"].to_list()
    writers = {message.rsplit(" ", 1)[1] for message in messages}
    assert len(messages) == 6 and str(os.getpid()) not in writers
    assert len(writers) == distributed.counts["commit_writers"] >= 1
    assert sorted(p.suffix for p in (tmp_path / "lake-data").rglob("*.parquet"))  # data there
    # The flow's report goes beside the data path; the temporary folder keeps nothing.
    assert (tmp_path / "lake-data.report.html").stat().st_size > 0
    anchor = locate(lake).anchor
    assert not anchor.with_name(f"{anchor.name}.report.html").exists()
    assert not anchor.with_name(f".{anchor.name}.work").exists()
    on_lake, on_file = _latest(lake), _latest(str(tmp_path / "local.duckdb"))
    assert on_lake["trace_id"].to_list() == on_file["trace_id"].to_list()
    assert (on_lake["novelty"] - on_file["novelty"]).abs().max() <= 1e-6  # type: ignore[operator]
    same = ["novelty_window", "complexity", "tool_diversity", "outcome_confidence", "shareable"]
    assert on_lake.select(same).equals(on_file.select(same))
