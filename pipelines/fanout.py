"""The embedding and novelty stages fanned out to a Dask cluster through Prefect's task runner.

The flow's process plans the work, writes each task's input to the run's work folder, and
stores what comes back: workers read and write files only, and the DuckDB file keeps its one
writer. Embedding chunks are committed as they finish, so a crash keeps the finished ones.
On a DuckLake the run's rows are written by the workers too (`commit_shards`), each shard its
own commit, and the flow's process publishes them.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import polars as pl
from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed
from prefect_dask import DaskTaskRunner

from pipelines import novelty_stages
from pipelines.embedder import SentenceEmbedder
from pipelines.runs import Run
from storage.config_files import load_settings
from storage.store.duckdb_store import DuckDBStore
from storage.store.publishing import Shard
from storage.store.registry import store_for
from transforms.config.scoring import ExecutionConfig, ScoringFile
from transforms.novelty import NoveltyResult, novelty_partitions, replay_novelty

__all__ = ["commit_shards", "dask_runner", "embed_and_replay", "write_shard"]

_task = task(cache_policy=NO_CACHE, persist_result=False)
_FANOUT = "fanout"


def dask_runner(execution: ExecutionConfig) -> DaskTaskRunner:
    """A DaskTaskRunner on the configured scheduler, or on a local cluster made for the run.

    Dask's own INFO logs (workers starting and stopping) are silenced, here and in the worker
    processes a local cluster starts.
    """
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")
    logging.getLogger("distributed").setLevel(logging.WARNING)
    if execution.dask_address is not None:
        return DaskTaskRunner(address=execution.dask_address)
    return DaskTaskRunner(
        cluster_kwargs={
            "n_workers": execution.workers,
            "threads_per_worker": execution.threads_per_worker,
            "processes": True,
            "dashboard_address": None,
            # The scheduler's HTTP server starts even without a dashboard, on port 8787 by
            # default: a free port keeps two clusters on one machine from colliding.
            "scheduler_kwargs": {"dashboard": False, "dashboard_address": "127.0.0.1:0"},
        }
    )


@_task
def embed_chunk(texts: str, config: str | None) -> str:
    """Embed the texts of one chunk file; returns the .npz file of their vectors, in order."""
    settings = load_settings(config)
    threads = settings.execution.threads_per_worker
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    vectors = SentenceEmbedder(settings.embedding).encode(
        pl.read_parquet(texts, columns=["text"])["text"].to_list()
    )
    out = Path(texts).with_suffix(".npz")
    _save_atomic(out, vectors=vectors)
    return str(out)


@_task
def replay_partition(inputs: str, threads: int) -> str:
    """Replay one partition (its targets and their halo) on `threads` threads, the worker's
    own (not every CPU of the machine, which its neighbours share); returns the .npz of N and
    windows."""
    with np.load(inputs) as data:
        result = replay_novelty(
            data["vectors"], data["window_start"], targets=data["targets"], threads=threads
        )
    out = Path(inputs).with_name(Path(inputs).stem + "-out.npz")
    _save_atomic(out, novelty=result.novelty, window=result.window)
    return str(out)


def _save_atomic(path: Path, **arrays: npt.NDArray[np.generic]) -> None:
    """Write `arrays` as one .npz beside `path`, then rename it into place."""
    partial = path.with_name(path.name + ".partial")
    with partial.open("wb") as handle:
        np.savez(handle, **arrays)  # type: ignore[arg-type]  # numpy stubs: keys may be allow_pickle
    partial.replace(path)


def _chunk_texts(execution: ExecutionConfig, texts: int) -> int:
    """Texts per embedding task: at most embed_chunk_texts, fewer so that each worker gets two
    tasks (a worker's first task also loads the model), and never below 64."""
    return min(execution.embed_chunk_texts, max(64, math.ceil(texts / (2 * execution.workers))))


def _embed(run: Run, config: str | None, settings: ScoringFile, folder: Path) -> dict[str, int]:
    store = store_for(run.db)
    todo, counts = novelty_stages.pending_texts(store, run, settings)
    chunks: dict[str, list[str]] = {}
    for number, part in enumerate(todo.iter_slices(_chunk_texts(settings.execution, todo.height))):
        path = folder / f"texts-{number:06d}.parquet"
        part.write_parquet(path)
        chunks[str(path)] = part["embedding_key"].to_list()
    futures = {embed_chunk.submit(path, config): path for path in chunks}

    def finished() -> Iterator[tuple[list[str], npt.NDArray[np.float32]]]:
        for future in as_completed(list(futures)):
            with np.load(future.result()) as data:
                yield chunks[futures[future]], data["vectors"]

    novelty_stages.put_vectors(store, run, settings, finished(), todo.height)
    return counts


def _distributed_replay(folder: Path, partition_rows: int, threads: int) -> novelty_stages.Replay:
    """`replay_novelty`'s contract, computed as one task per partition (targets and halo)."""

    def replay(
        embeddings: npt.NDArray[np.float32],
        window_start: npt.NDArray[np.int64],
        *,
        targets: npt.NDArray[np.bool_],
    ) -> NoveltyResult:
        novelty = np.full(len(window_start), np.nan, dtype=np.float64)
        window = np.zeros(len(window_start), dtype=np.int64)
        spans: dict[str, tuple[int, int, int]] = {}
        for number, (halo, first, end) in enumerate(
            novelty_partitions(window_start, targets, partition_rows)
        ):
            path = folder / f"novelty-{number:06d}.npz"
            wanted = np.zeros(end - halo, dtype=bool)
            wanted[first - halo :] = targets[first:end]
            np.savez(
                path,
                vectors=embeddings[halo:end],
                # halo rows are not targets; their windows only need to stay valid
                window_start=np.maximum(window_start[halo:end] - halo, 0),
                targets=wanted,
            )
            spans[str(path)] = (halo, first, end)
        futures = {replay_partition.submit(path, threads): path for path in spans}
        for future in as_completed(list(futures)):
            halo, first, end = spans[futures[future]]
            with np.load(future.result()) as data:
                novelty[first:end] = data["novelty"][first - halo :]
                window[first:end] = data["window"][first - halo :]
        return NoveltyResult(novelty=novelty, window=window)

    return replay


@flow(name="embed_and_replay", persist_result=False, log_prints=False)
def embed_and_replay(run: Run, config: str | None) -> dict[str, int]:
    """Embed the run's missing texts and replay its novelty on the flow's (Dask) task runner.

    Run it with `embed_and_replay.with_options(task_runner=dask_runner(...))`; N equals the
    local replay's, since each partition carries the whole window of its first target.
    """
    settings = load_settings(config)
    folder = run.path(_FANOUT)
    folder.mkdir(exist_ok=True)
    counts = _embed(run, config, settings, folder)
    execution = settings.execution
    replay = _distributed_replay(
        folder, execution.novelty_partition_rows, execution.threads_per_worker
    )
    counts |= novelty_stages.replay_staged(store_for(run.db), run, settings, replay)
    return counts


@_task
def write_shard(db: str, shard: Shard) -> int:
    """Store one shard of a run's rows into the DuckLake `db`, unpublished, from this worker's
    own connection; returns the worker's process id."""
    with DuckDBStore(db) as store:
        store.write_shard(shard)
    return os.getpid()


@flow(name="commit_shards", persist_result=False, log_prints=False)
def commit_shards(db: str, shards: list[Shard]) -> int:
    """Write the shards on the flow's (Dask) task runner, each worker committing its own to the
    DuckLake; returns how many worker processes wrote. The flow's process publishes after."""
    futures = [write_shard.submit(db, shard) for shard in shards]
    return len({future.result() for future in as_completed(futures)})
