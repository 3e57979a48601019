"""The `backfill` flow: an archive scored in chronological chunks, each committed on its own.

    stage the archive once -> for each chunk of event time, oldest first:
        plan -> embed -> score -> commit (batches, published at once) -> next chunk
    -> quarantine rows and the file ledger

A chunk whose traces are all stored with the same content has nothing to do, so a backfill
that was interrupted resumes by running again: the finished chunks are recognised and only
the missing ones are scored.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from datetime import time as clock

from pipelines import staging
from pipelines.report import publish_run
from pipelines.runs import RunSteps, RunTally
from pipelines.scoring_steps import score_run, scoring_steps_of, summarise
from pipelines.staged_levels import STAGED_LEVELS, StagedLevels
from pipelines.stages import FRESH
from storage.config_files import load_settings
from storage.inputs import formats
from storage.inputs.input_paths import input_files
from storage.store.registry import held_store
from transforms.config.confidence import ConfidenceConfig
from transforms.config.scoring import ScoringFile
from transforms.errors import ConfigError
from transforms.summary import RunSummary

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
    file_format = formats.file_format()  # each file's format recognised from its content
    input_files(paths, file_format)  # a path that names nothing stops the run here
    embed = settings.embedding.enabled and not no_embedder
    with (
        held_store(db) as store,
        scoring_steps_of(store, "backfill", settings, embed=embed, recover=True) as archive,
    ):
        levels = StagedLevels(
            ConfidenceConfig(), archive.run.run_id, archive.run.path(STAGED_LEVELS)
        )
        archive.step(
            "read and validate",
            staging.stage_inputs,
            store,
            archive.run,
            paths,
            force=True,
            file_format=file_format,
            levels=levels,
        )
        low, high = bounds[0][0], bounds[-1][1]
        archive.step("split", staging.limit_to_range, store, archive.run, low, high)
        chunk_runs: list[str] = []
        for low, high in bounds:
            chunk_run, tally = _score_chunk(archive, low, high, config, settings, embed, levels)
            archive.tally.merge(tally)
            chunk_runs.append(chunk_run)
        archive.step("ledger", staging.commit_ledger, store, archive.run)
        archive.tally.counts["rows_scored"] = archive.tally.counts.pop("rows_valid", 0)
        summary = summarise(archive, "completed", chunk_runs)
        archive.finish("completed", summary.markdown)
    publish_run(db, summary.markdown, "backfill-summary", "tracegrade backfill summary")
    return summary


def _score_chunk(
    archive: RunSteps,
    low: datetime,
    high: datetime,
    config: str | None,
    settings: ScoringFile,
    embed: bool,
    levels: StagedLevels,
) -> tuple[str, RunTally]:
    """Score one chunk of the staged archive as its own run, published in one transaction,
    its levels taken from those computed while the archive was staged; returns the chunk's
    run id and its tally."""
    with scoring_steps_of(
        archive.store, "backfill_chunk", settings, embed=embed, recover=False
    ) as chunk:
        staging.stage_chunk(archive.store, archive.run, chunk.run, low, high)
        staged = levels.parts(chunk.run.path(FRESH))
        score_run(chunk, settings, embed, config, levels.config, staged)
        tally = chunk.tally
        tally.counts["rows_scored"] = tally.counts.pop("rows_scored_now", 0)
        chunk.finish("completed", summarise(chunk, "completed", [chunk.run.run_id]).markdown)
    fresh = tally.counts.get("rows_new", 0) + tally.counts.get("rows_changed", 0)
    tally.counts["chunks_scored" if fresh else "chunks_already_done"] = 1
    tally.counts.pop("rows_scored")
    return chunk.run.run_id, tally
