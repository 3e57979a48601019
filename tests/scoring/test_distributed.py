"""The embedding and novelty stages on a Dask cluster give the local run's results.

The cluster here is the one an operator starts: `dask scheduler` and `dask worker` of the
project's install (the release pinned in constraints.txt), named by `dask_address`. The local
cluster a run starts for itself when no address is set is what the DuckLake and judge fan-out
tests use (tests/store/test_ducklake_postgres.py, tests/judge/test_judge_fanout.py).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transforms.novelty import novelty_partitions, replay_novelty, window_bounds
from transforms.synth.traces import synthetic_traces

N_TRACES = 400


def write_config(folder: Path, extra: str) -> Path:
    path = folder / "tracegrade.toml"
    path.write_text(f'[novelty]\nscope = "agent"\nttl_seconds = 345600\nmax_elements = 6\n{extra}')
    return path


def scores_and_vectors(db: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        scores = con.sql(
            "SELECT trace_id, novelty, novelty_window, novelty_source, complexity, "
            "tool_diversity, outcome_confidence, score, shareable FROM latest_scores "
            "ORDER BY trace_id"
        ).pl()
        vectors = con.sql("SELECT embedding_key, vector FROM embeddings ORDER BY 1").pl()
    finally:
        con.close()
    return scores, vectors


@pytest.fixture
def dask_cluster() -> Iterator[str]:
    """`dask scheduler` and two `dask worker` processes on 127.0.0.1; yields the address."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    dask = str(Path(sys.executable).parent / "dask")
    env = {**os.environ, "DASK_LOGGING__DISTRIBUTED": "warning"}
    commands = [
        [dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        [dask, "worker", address, "--nworkers", "2", "--nthreads", "1", "--no-dashboard"],
    ]
    started = [subprocess.Popen(c, env=env, start_new_session=True) for c in commands]
    try:
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for process in reversed(started):
            os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for process in started:
            try:
                process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_server")
def test_dask_run_equals_the_local_run(tmp_path: Path, dask_cluster: str) -> None:
    from pipelines.flows import score_traces

    export = tmp_path / "traces.parquet"
    synthetic_traces(N_TRACES, seed=7).with_columns(pl.col("steps").list.head(2)).write_parquet(
        export
    )
    (tmp_path / "local").mkdir()
    (tmp_path / "dask").mkdir()
    warehouse = tmp_path / "warehouse"
    local_config = write_config(tmp_path / "local", f'[output]\nscores_parquet = "{warehouse}"\n')
    local = score_traces([str(export)], db=str(tmp_path / "local.duckdb"), config=str(local_config))
    dask_config = write_config(
        tmp_path / "dask",
        f'[execution]\nengine = "dask"\ndask_address = "{dask_cluster}"\nworkers = 2\n'
        "embed_chunk_texts = 90\nnovelty_partition_rows = 70\n",
    )
    distributed = score_traces(
        [str(export)], db=str(tmp_path / "dask.duckdb"), config=str(dask_config)
    )

    assert local.counts["rows_scored"] == distributed.counts["rows_scored"] == N_TRACES
    assert distributed.counts["texts_embedded"] == local.counts["texts_embedded"] > 90
    assert "embed and replay (dask)" in distributed.timings
    local_scores, local_vectors = scores_and_vectors(tmp_path / "local.duckdb")
    dask_scores, dask_vectors = scores_and_vectors(tmp_path / "dask.duckdb")
    assert local_vectors["embedding_key"].to_list() == dask_vectors["embedding_key"].to_list()
    vector_diff = np.abs(
        np.stack(local_vectors["vector"].to_numpy()) - np.stack(dask_vectors["vector"].to_numpy())
    ).max()
    assert vector_diff < 1e-5  # other batch neighbours, other padding: float noise only
    novelty_diff = np.abs(local_scores["novelty"] - dask_scores["novelty"]).max()
    assert novelty_diff is not None and novelty_diff <= 1e-6
    assert (local_scores["novelty_source"] == "embedding").sum() > N_TRACES // 2
    same = [
        "trace_id",
        "novelty_window",
        "novelty_source",
        "complexity",
        "tool_diversity",
        "outcome_confidence",
    ]
    assert local_scores.select(same).equals(dask_scores.select(same))
    assert np.abs(local_scores["score"] - dask_scores["score"]).max() <= 1e-6

    assert local.counts["parquet_partitions"] == len(list(warehouse.glob("date=*"))) >= 28
    copy = pl.read_parquet(warehouse / "**" / "*.parquet", hive_partitioning=False)
    assert copy.sort("trace_id").select(local_scores.columns).equals(local_scores)


@settings(max_examples=60, deadline=None)
@given(
    scopes=st.lists(st.integers(0, 3), min_size=1, max_size=120),
    gaps=st.lists(st.integers(0, 5), min_size=120, max_size=120),
    rows=st.integers(1, 40),
    capacity=st.integers(1, 30),
    keep=st.lists(st.booleans(), min_size=120, max_size=120),
)
def test_partitions_cover_each_target_once_and_replay_to_the_same_n(
    scopes: list[int], gaps: list[int], rows: int, capacity: int, keep: list[bool]
) -> None:
    n = len(scopes)
    codes = np.sort(np.array(scopes, dtype=np.int64))
    times = np.cumsum(np.array(gaps[:n], dtype=np.int64))
    times = np.concatenate([np.sort(times[codes == c]) for c in np.unique(codes)])
    lo = window_bounds(codes, times, max_elements=capacity, ttl_us=8)
    targets = np.array(keep[:n])
    vectors = np.random.default_rng(n).normal(size=(n, 8)).astype(np.float32)
    whole = replay_novelty(vectors, lo, targets=targets)

    covered = np.zeros(n, dtype=int)
    novelty = np.full(n, np.nan)
    for halo, first, end in novelty_partitions(lo, targets, rows):
        assert halo == lo[first] and first < end and targets[first] and targets[end - 1]
        assert targets[first:end].sum() <= rows
        covered[first:end] += targets[first:end]
        part = replay_novelty(
            vectors[halo:end],
            np.maximum(lo[halo:end] - halo, 0),
            targets=np.r_[np.zeros(first - halo, dtype=bool), targets[first:end]],
        )
        novelty[first:end] = part.novelty[first - halo :]
    assert (covered == targets).all()
    np.testing.assert_array_equal(novelty[targets], whole.novelty[targets])
