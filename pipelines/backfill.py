"""The `backfill` flow: an archive scored in chronological chunks, each committed on its own.

    stage the archive once -> for each chunk of event time, oldest first:
        plan -> embed -> score -> commit (one transaction) -> next chunk
    -> quarantine rows and the file ledger

A chunk whose traces are all stored with the same content has nothing to do, so a backfill
that was interrupted resumes by running again: the finished chunks are recognised and only
the missing ones are scored.
"""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock

from prefect import flow
from prefect.artifacts import create_markdown_artifact

from pipelines import stages
from pipelines.score import RunTally, finish, score_run, stage_inputs
from pipelines.stages import StagedRun
from storage.registry import held_store, store_for
from tracegrade.config import load_settings
from tracegrade.errors import ConfigError
from tracegrade.summary import RunSummary

__all__ = ["backfill", "chunk_bounds"]


def chunk_bounds(start: date, end: date, chunk_days: int) -> list[tuple[datetime, datetime]]:
    """[from, to) event-time ranges of `chunk_days` UTC days covering start..end inclusive."""
    if chunk_days < 1:
        raise ConfigError(f"chunk_days is {chunk_days}, expected at least 1 (days per chunk)")
    if end < start:
        raise ConfigError(f"end {end} is before start {start}; give --start <= --end")
    first = datetime.combine(start, clock(), tzinfo=UTC)
    last = datetime.combine(end + timedelta(days=1), clock(), tzinfo=UTC)
    step = timedelta(days=chunk_days)
    edges = []
    low = first
    while low < last:
        edges.append((low, min(low + step, last)))
        low += step
    return edges


@flow(name="backfill", persist_result=False, log_prints=False)
def backfill(
    paths: list[str],
    start: date,
    end: date,
    db: str = "tracegrade.duckdb",
    config: str | None = None,
    no_embedder: bool = False,
    chunk_days: int = 1,
) -> RunSummary:
    """Score the traces of an archive whose created_at falls on start..end (UTC days).

    Args:
        paths: the archive's files, folders or globs (every file is read; rows outside the
            date range are counted and left for another backfill).
        start: first UTC day to score.
        end: last UTC day to score (inclusive).
        db: the DuckDB file.
        config: a TOML configuration file; None uses the defaults.
        no_embedder: score without embeddings (N = 0.5 for every trace).
        chunk_days: days of event time per chunk; each chunk commits on its own.
    """
    bounds = chunk_bounds(start, end, chunk_days)
    settings = load_settings(config)
    embed = settings.embedding.enabled and not no_embedder
    tally = RunTally()
    with held_store(db) as store:
        archive = stages.start_run(store, "backfill", settings, embed=embed)
        try:
            started = time.perf_counter()
            tally.record("read and validate", started, stage_inputs(archive, paths, True))
            started = time.perf_counter()
            tally.record(
                "split", started, stages.limit_to_range(archive, bounds[0][0], bounds[-1][1])
            )
            chunk_runs: list[str] = []
            for low, high in bounds:
                tally.merge(_score_chunk(archive, low, high, config, embed, chunk_runs))
            started = time.perf_counter()
            stages.commit_ledger(store, archive)
            tally.record("ledger", started, None)
        except BaseException as exc:
            finish(archive, tally, "failed", exc)
            raise
        tally.counts["rows_scored"] = tally.counts.pop("rows_valid", 0)
        summary = finish(archive, tally, "completed", scored_by=chunk_runs)
    create_markdown_artifact(
        summary.markdown, key="backfill-summary", description="tracegrade backfill summary"
    )
    return summary


def _score_chunk(
    archive: StagedRun,
    low: datetime,
    high: datetime,
    config: str | None,
    embed: bool,
    chunk_runs: list[str],
) -> RunTally:
    """Score one chunk of the staged archive as its own run, committed in one transaction."""
    store = store_for(archive.db)
    chunk = stages.start_run(
        store, "backfill_chunk", load_settings(config), embed=embed, recover=False
    )
    chunk_runs.append(chunk.run_id)
    tally = RunTally()
    try:
        stages.stage_chunk(archive, chunk, low, high)
        score_run(chunk, config, embed, tally)
    except BaseException as exc:
        finish(chunk, tally, "failed", exc)
        raise
    tally.counts["rows_scored"] = tally.counts.pop("rows_scored_now", 0)
    finish(chunk, tally, "completed")
    fresh = tally.counts.get("rows_new", 0) + tally.counts.get("rows_changed", 0)
    tally.counts["chunks_scored" if fresh else "chunks_already_done"] = 1
    tally.counts.pop("rows_scored")
    return tally
