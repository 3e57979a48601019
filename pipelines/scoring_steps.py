"""The steps of a scoring run, from the staged traces to the summary: plan novelty -> embed
new texts -> replay -> score -> commit -> (Parquet copy) -> derived confidence -> summary.

`pipelines.score` (the flow) decides whether there is anything to do and imports this module
only then; `pipelines.backfill` runs the same steps a chunk at a time.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from pipelines import confidence_stages, stages, staging
from pipelines.confidence_stages import StagedParts
from pipelines.report import publish_run
from pipelines.runs import Run, RunSteps
from pipelines.staged_levels import STAGED_LEVELS, StagedLevels
from storage.confidence.store import confidence_levels
from storage.errors import StalePlanError
from storage.inputs.readers import FileFormat
from storage.report.parquet_export import export_scores
from storage.report.summary import run_domains
from storage.store.duckdb_store import DuckDBStore
from storage.store.latest_rows import has_pending
from storage.store.registry import held_store
from transforms.config.confidence import ConfidenceConfig
from transforms.config.scoring import ScoringFile
from transforms.summary import RunSummary, build_summary

__all__ = ["score_files", "score_run", "scoring_steps_of", "summarise"]


def scoring_steps_of(
    store: DuckDBStore, flow: str, settings: ScoringFile, *, embed: bool, recover: bool
) -> RunSteps:
    """The steps of a new run of a scoring flow, logged with the settings that change scores."""
    return RunSteps(
        store,
        flow,
        config=settings.model_dump(mode="json"),
        config_hash=settings.config_hash,
        model=settings.embedding.model_key() if embed else None,
        recover=recover,
    )


def _fan_out(run: Any, config: str | None, settings: ScoringFile) -> dict[str, int]:
    """Embedding and replay on a Dask cluster (a Prefect subflow with a DaskTaskRunner)."""
    from pipelines.fanout import dask_runner, embed_and_replay

    runner: Any = dask_runner(settings.execution)
    result: dict[str, int] = embed_and_replay.with_options(task_runner=runner)(run, config)
    return result


def _commit_on_workers(store: DuckDBStore, run: Run, settings: ScoringFile) -> dict[str, int]:
    """The run's rows written to the DuckLake by the Dask workers, a shard each, then
    published by this process in one transaction."""
    from pipelines.fanout import commit_shards, dask_runner

    tables, traces, planned_at = stages.commit_inputs(run)
    folder = run.path("shards")
    folder.mkdir(exist_ok=True)
    batch = settings.execution.commit_batch_rows
    shards = store.shards(run.handle, tables, folder, traces=traces, batch_rows=batch)
    runner: Any = dask_runner(settings.execution)
    writers = commit_shards.with_options(task_runner=runner)(store.db, shards)
    store.publish_run(run.handle, tables, traces=traces, planned_at=planned_at)
    return {"commit_shards": len(shards), "commit_writers": writers}


def _plan_to_commit(
    steps: RunSteps, settings: ScoringFile, embed: bool, config: str | None
) -> None:
    store, run = steps.store, steps.run
    steps.step("plan", stages.plan_novelty, store, run, settings, embed=embed)
    if embed and settings.execution.engine == "dask":
        steps.inline("embed and replay (dask)", _fan_out, run, config, settings)
    elif embed:
        from pipelines import novelty_stages  # the model and replay: only a run with texts

        steps.step("embed", novelty_stages.embed_texts, store, run, settings)
        steps.step("replay", novelty_stages.replay_staged, store, run, settings)
    steps.step("score", stages.score_staged, store, run, settings, embed=embed)
    if settings.execution.engine == "dask" and store.location.catalog is not None:
        steps.inline("commit (dask)", _commit_on_workers, store, run, settings)
    else:
        steps.step(
            "commit", stages.commit_results, store, run, settings.execution.commit_batch_rows
        )


def score_run(
    steps: RunSteps,
    settings: ScoringFile,
    embed: bool,
    config: str | None,
    confidence: ConfidenceConfig | None,
    staged: StagedParts | None = None,
) -> None:
    """Plan, embed, score and commit the traces staged in the run (its valid.parquet), then
    give them their derived confidence levels (none when `confidence` is None): those
    computed while staging (`staged`, with the same configuration) for the traces it stored,
    and any other stored trace without a current one read back."""
    store, run = steps.store, steps.run
    counts = dict(steps.tally.counts)
    try:
        _plan_to_commit(steps, settings, embed, config)
    except StalePlanError:
        # Another run stored traces since this one planned (runs let go of the file between
        # steps): plan again with the file held, so that nothing changes under the plan. The
        # counts are those of the new plan; the seconds of both stay in the timings.
        steps.tally.counts = counts
        with store.held():
            _plan_to_commit(steps, settings, embed, config)
    folder = settings.output.scores_parquet
    if folder is not None:
        steps.step("parquet export", _export_parquet, store, folder)
    if confidence is not None:
        run.path("confidence").mkdir(exist_ok=True)
        steps.step(
            "confidence",
            confidence_stages.derived_stage,
            store,
            run.run_id,
            run.path("confidence"),
            confidence,
            staged=staged,
        )
    # The publication of the levels folded the run's traces into the comparison's table;
    # without levels (or none changed) they are folded here.
    if has_pending(store.rows):
        steps.step("latest rows", store.fold_latest_rows)


def _export_parquet(store: DuckDBStore, folder: str) -> dict[str, int]:
    """Rewrite the date partitions of the Parquet copy that this run's scores touched."""
    return {"parquet_partitions": len(export_scores(store, folder))}


def summarise(steps: RunSteps, status: str, scored_by: list[str]) -> RunSummary:
    """The run's summary: `scored_by` names the runs whose scores it shows (a backfill's
    chunks, or the run itself)."""
    store, run = steps.store, steps.run
    domains = run_domains(store, scored_by)
    quarantine_path = run.path(staging.QUARANTINE)
    quarantine = (
        pl.read_parquet(quarantine_path)
        if quarantine_path.exists()
        else pl.DataFrame(schema={"rule": pl.String})
    )
    levels = confidence_levels(store, "derived", scored_by)
    tally = steps.tally
    summary = build_summary(
        run.run_id, status, tally.counts, tally.timings, domains, quarantine, levels, steps.model
    )
    holds = store.holds.so_far()
    if store.location.catalog is not None:
        summary.markdown += (
            f"\nThe run wrote to a DuckLake ({store.location.catalog} catalog): readers and "
            "other runs work beside it, and see its rows once it published them.\n"
        )
    else:
        summary.markdown += (
            f"\nThe run held the database file {len(holds)} times, the longest "
            f"{max(holds):.2f} s, {sum(holds):.2f} s in all (other processes open it in "
            "between; docs/storage.md).\n"
        )
    return summary


def score_files(
    paths: list[str],
    db: str,
    settings: ScoringFile,
    confidence: ConfidenceConfig,
    *,
    file_format: FileFormat,
    embed: bool,
    force: bool,
    config: str | None,
) -> RunSummary:
    """One recorded run over `paths` (see `pipelines.score.score_traces`): read and validate,
    the scoring steps, the derived levels, the summary, published as the run's artifact."""
    with (
        held_store(db) as store,
        scoring_steps_of(store, "score_traces", settings, embed=embed, recover=True) as steps,
    ):
        levels = StagedLevels(confidence, steps.run.run_id, steps.run.path(STAGED_LEVELS))
        steps.step(
            "read and validate",
            staging.stage_inputs,
            store,
            steps.run,
            paths,
            force=force,
            file_format=file_format,
            levels=levels,
        )
        staged = levels.parts(steps.run.path(stages.FRESH))
        score_run(steps, settings, embed, config, confidence, staged)
        counts = steps.tally.counts
        counts["rows_scored"] = counts.pop("rows_valid", 0)
        counts.pop("rows_scored_now", None)
        summary = summarise(steps, "completed", [steps.run.run_id])
        steps.finish("completed", summary.markdown)
    publish_run(db, summary.markdown, "score-traces-summary", "tracegrade run summary")
    return summary
