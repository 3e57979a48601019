"""The `score_traces` flow: trace exports in, one scored row per trace in DuckDB out.

stage inputs -> plan novelty -> embed new texts -> score -> commit -> summary
"""

from __future__ import annotations

import shutil
import time
from importlib.metadata import version

import polars as pl
from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from pipelines import stages
from pipelines.stages import StagedRun
from storage.duckdb_store import RunRecord
from storage.registry import held_store, store_for
from tracegrade.config import Settings, load_settings
from tracegrade.summary import RunSummary, build_summary

__all__ = ["score_traces"]

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
    return stages.embed_texts(store_for(run.db), run, load_settings(config))


@_task
def score(run: StagedRun, config: str | None, embed: bool) -> dict[str, int]:
    """Replay novelty and compute value scores."""
    return stages.score_staged(store_for(run.db), run, load_settings(config), embed=embed)


@_task
def commit(run: StagedRun) -> None:
    """Write everything the run produced in one transaction."""
    stages.commit_results(store_for(run.db), run)


def _start(db: str, settings: Settings, embed: bool) -> StagedRun:
    store = store_for(db)
    handle = store.begin_run(
        "score_traces",
        version=version("tracegrade"),
        model=settings.embedding.model_key() if embed else None,
        config=settings.model_dump(mode="json"),
        config_hash=settings.scoring_hash(),
    )
    # A hidden folder beside the database: folder inputs skip hidden entries, so staging files
    # are never read back as exports even when the database sits in the export folder.
    work_dir = store.path.parent / f".{store.path.name}.work" / handle.run_id
    work_dir.mkdir(parents=True, exist_ok=True)
    return StagedRun(str(store.path), handle.run_id, handle.run_seq, str(work_dir))


def _summarise(
    run: StagedRun, status: str, counts: dict[str, int], timings: dict[str, float]
) -> RunSummary:
    store = store_for(run.db)
    scores = store.sql(
        "SELECT task_domain, score, shareable FROM scores WHERE run_id = ?", [run.run_id]
    )
    quarantine_path = run.path(stages.QUARANTINE)
    quarantine = (
        pl.read_parquet(quarantine_path)
        if quarantine_path.exists()
        else pl.DataFrame(schema={"rule": pl.String})
    )
    return build_summary(run.run_id, status, counts, timings, scores, quarantine)


@flow(name="score_traces", persist_result=False, log_prints=False)
def score_traces(
    paths: list[str],
    db: str = "tracegrade.duckdb",
    config: str | None = None,
    no_embedder: bool = False,
    force: bool = False,
) -> RunSummary:
    """Score trace exports (files, folders or globs) into the DuckDB file `db`.

    Args:
        paths: JSONL, JSON or Parquet exports of ReasoningTrace objects.
        db: the DuckDB file; created when missing.
        config: a TOML configuration file; None uses the defaults.
        no_embedder: score without embeddings (N = 0.5 for every trace).
        force: read files again even when the ledger has them with the same content.
    """
    settings = load_settings(config)
    embed = settings.embedding.enabled and not no_embedder
    counts: dict[str, int] = {}
    timings: dict[str, float] = {}

    def timed(name: str, result: dict[str, int] | None) -> None:
        timings[name] = time.perf_counter() - started
        counts.update(result or {})

    with held_store(db) as store:
        run = _start(db, settings, embed)
        try:
            started = time.perf_counter()
            timed("read and validate", stage_inputs(run, paths, force))
            started = time.perf_counter()
            timed("plan", plan_novelty(run, config, embed))
            if embed:
                started = time.perf_counter()
                timed("embed", embed_texts(run, config))
            started = time.perf_counter()
            timed("score", score(run, config, embed))
            started = time.perf_counter()
            timed("commit", commit(run))
            counts["rows_scored"] = counts.pop("rows_valid", 0)
            counts.pop("rows_scored_now", None)
            summary = _summarise(run, "completed", counts, timings)
            store.finish_run(
                run.handle, RunRecord("completed", _logged(counts), timings, summary.markdown)
            )
        except BaseException as exc:
            store.finish_run(
                run.handle, RunRecord("failed", _logged(counts), timings, "", error=repr(exc))
            )
            raise
        finally:
            shutil.rmtree(run.work_dir, ignore_errors=True)
    create_markdown_artifact(
        summary.markdown, key="score-traces-summary", description="tracegrade run summary"
    )
    return summary


def _logged(counts: dict[str, int]) -> dict[str, int]:
    columns = {
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
    }
    return {key: value for key, value in counts.items() if key in columns}
