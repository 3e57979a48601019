"""The `score_traces` flow: trace exports in, one scored row per trace in DuckDB out.

stage inputs -> plan novelty -> embed new texts -> score -> commit -> summary
"""

from __future__ import annotations

import shutil
import time
from typing import Any

import polars as pl
from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from pipelines import confidence_stages, novelty_stages, stages
from pipelines.fanout import dask_runner, embed_and_replay
from pipelines.judge import judge_after_scoring
from pipelines.stages import StagedRun
from storage.confidence_store import confidence_levels, ensure_confidence_schema
from storage.duckdb_store import RunRecord
from storage.parquet_export import export_scores
from storage.registry import held_store, store_for
from tracegrade.confidence_config import load_confidence_config
from tracegrade.config import load_settings
from tracegrade.summary import RunSummary, build_summary

__all__ = ["RunTally", "finish", "score_run", "score_traces"]

_task = task(cache_policy=NO_CACHE, persist_result=False)


@_task
def stage_inputs(run: StagedRun, paths: list[str], force: bool) -> dict[str, int]:
    """Read, validate and stage the input files."""
    return stages.stage_inputs(store_for(run.db), run, paths, force=force)


@_task
def plan_novelty(run: StagedRun, config: str | None, embed: bool) -> dict[str, int]:
    """Classify traces as new, changed or unchanged and plan the novelty replay."""
    return stages.plan_novelty(store_for(run.db), run, load_settings(config), embed=embed)


@_task
def embed_texts(run: StagedRun, config: str | None) -> dict[str, int]:
    """Embed the texts the replay needs that are not stored yet."""
    return novelty_stages.embed_texts(store_for(run.db), run, load_settings(config))


@_task
def replay(run: StagedRun, config: str | None) -> dict[str, int]:
    """Replay the novelty caches in event time over the stored and new embeddings."""
    return novelty_stages.replay_staged(store_for(run.db), run, load_settings(config))


@_task
def score(run: StagedRun, config: str | None, embed: bool) -> dict[str, int]:
    """Compute value scores with the replayed novelty."""
    return stages.score_staged(store_for(run.db), run, load_settings(config), embed=embed)


@_task
def commit(run: StagedRun) -> None:
    """Write everything the run produced in one transaction."""
    stages.commit_results(store_for(run.db), run)


@_task
def export_parquet(run: StagedRun, folder: str) -> dict[str, int]:
    """Rewrite the date partitions of the Parquet copy that this run's scores touched."""
    return {"parquet_partitions": len(export_scores(store_for(run.db), folder))}


@_task
def confidence(run: StagedRun, confidence_config: str | None) -> dict[str, int]:
    """Give every stored trace without a current derived confidence its level (SPEC 5)."""
    return confidence_stages.derived_stage(
        store_for(run.db),
        run.run_id,
        run.path("confidence"),
        load_confidence_config(confidence_config),
    )


def _summarise(
    run: StagedRun,
    status: str,
    counts: dict[str, int],
    timings: dict[str, float],
    scored_by: list[str],
) -> RunSummary:
    store = store_for(run.db)
    scores = store.sql(
        "SELECT task_domain, score, shareable FROM scores WHERE list_contains(?, run_id)",
        [scored_by],
    )
    quarantine_path = run.path(stages.QUARANTINE)
    quarantine = (
        pl.read_parquet(quarantine_path)
        if quarantine_path.exists()
        else pl.DataFrame(schema={"rule": pl.String})
    )
    ensure_confidence_schema(store)
    levels = confidence_levels(store, "derived", scored_by)
    return build_summary(run.run_id, status, counts, timings, scores, quarantine, levels)


class RunTally:
    """Counts and per-stage timings of a run, filled in as its stages finish."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.timings: dict[str, float] = {}

    def record(self, stage: str, started: float, counts: dict[str, int] | None) -> None:
        """Add a finished stage's counts and the seconds since `started`."""
        self.timings[stage] = self.timings.get(stage, 0.0) + time.perf_counter() - started
        for key, value in (counts or {}).items():
            self.counts[key] = self.counts.get(key, 0) + value

    def merge(self, other: RunTally) -> None:
        """Add another tally's counts and timings to this one."""
        for key, value in other.counts.items():
            self.counts[key] = self.counts.get(key, 0) + value
        for stage, seconds in other.timings.items():
            self.timings[stage] = self.timings.get(stage, 0.0) + seconds

    def logged(self) -> dict[str, int]:
        """The counts the runs table has columns for."""
        return {key: value for key, value in self.counts.items() if key in _LOGGED}


_LOGGED = {
    "files_read",
    "files_skipped",
    "files_quarantined",
    "rows_read",
    "rows_scored",
    "rows_quarantined",
    "rows_new",
    "rows_changed",
    "rows_unchanged",
    "rows_rescored",
    "texts_embedded",
    "texts_cached",
    "rows_out_of_range",
    "rows_late",
}


def score_run(
    run: StagedRun,
    config: str | None,
    embed: bool,
    tally: RunTally,
    confidence_config: str | None = None,
) -> None:
    """Plan, embed, score and commit the traces staged in `run` (its valid.parquet), then give
    them their derived confidence levels."""
    settings = load_settings(config)
    started = time.perf_counter()
    tally.record("plan", started, plan_novelty(run, config, embed))
    if embed:
        execution = settings.execution
        started = time.perf_counter()
        if execution.engine == "dask":
            # prefect-dask's runner yields Dask futures, which Flow's signature does not name
            runner: Any = dask_runner(execution)
            fan_out = embed_and_replay.with_options(task_runner=runner)
            tally.record("embed and replay (dask)", started, fan_out(run, config))
        else:
            tally.record("embed", started, embed_texts(run, config))
            started = time.perf_counter()
            tally.record("replay", started, replay(run, config))
    started = time.perf_counter()
    tally.record("score", started, score(run, config, embed))
    started = time.perf_counter()
    tally.record("commit", started, commit(run))
    folder = settings.output.scores_parquet
    if folder is not None:
        started = time.perf_counter()
        tally.record("parquet export", started, export_parquet(run, folder))
    started = time.perf_counter()
    run.path("confidence").mkdir(exist_ok=True)
    tally.record("confidence", started, confidence(run, confidence_config))


def finish(
    run: StagedRun,
    tally: RunTally,
    status: str,
    error: BaseException | None = None,
    scored_by: list[str] | None = None,
) -> RunSummary:
    """Summarise the run, close its log entry and remove its staging folder.

    `scored_by` names the runs whose scores the summary shows (default: this run).
    """
    store = store_for(run.db)
    summary = _summarise(run, status, tally.counts, tally.timings, scored_by or [run.run_id])
    store.finish_run(
        run.handle,
        RunRecord(
            status,
            tally.logged(),
            tally.timings,
            summary.markdown,
            error=None if error is None else repr(error),
        ),
    )
    shutil.rmtree(run.work_dir, ignore_errors=True)
    return summary


@flow(name="score_traces", persist_result=False, log_prints=False)
def score_traces(
    paths: list[str],
    db: str = "tracegrade.duckdb",
    config: str | None = None,
    no_embedder: bool = False,
    force: bool = False,
    confidence_config: str | None = None,
    judge_config: str | None = None,
) -> RunSummary:
    """Score trace exports (files, folders or globs) into the DuckDB file `db`.

    Args:
        paths: JSONL, JSON or Parquet exports of ReasoningTrace objects.
        db: the DuckDB file; created when missing.
        config: a TOML configuration file; None uses the defaults.
        no_embedder: score without embeddings (N = 0.5 for every trace).
        force: read files again even when the ledger has them with the same content.
        confidence_config: a confidence TOML file (docs/confidence.md); None: the defaults.
        judge_config: an evaluator.toml; when given (and its API keys are set) the stored
            traces are judged after scoring, else the summary says why the judge was skipped.
    """
    settings = load_settings(config)
    load_confidence_config(confidence_config)
    embed = settings.embedding.enabled and not no_embedder
    tally = RunTally()
    with held_store(db) as store:
        run = stages.start_run(store, "score_traces", settings, embed=embed)
        try:
            started = time.perf_counter()
            tally.record("read and validate", started, stage_inputs(run, paths, force))
            score_run(run, config, embed, tally, confidence_config)
        except BaseException as exc:
            finish(run, tally, "failed", exc)
            raise
        tally.counts["rows_scored"] = tally.counts.pop("rows_valid", 0)
        tally.counts.pop("rows_scored_now", None)
        summary = finish(run, tally, "completed")
    create_markdown_artifact(
        summary.markdown, key="score-traces-summary", description="tracegrade run summary"
    )
    summary.markdown += "\n" + judge_after_scoring(db, judge_config).markdown
    return summary
