"""The `score_traces` flow: trace exports in, one scored row per trace in DuckDB out.

read and validate -> plan novelty -> embed new texts -> replay -> score -> commit
-> (Parquet copy) -> derived confidence -> summary -> judge (when configured)
"""

from __future__ import annotations

from typing import Any

import polars as pl

from pipelines import confidence_stages, stages, staging
from pipelines.confidence_stages import StagedParts
from pipelines.report import publish_run
from pipelines.runs import Run, RunSteps, publish_markdown, run_logger
from pipelines.staged_levels import STAGED_LEVELS, StagedLevels
from storage import formats
from storage.confidence_store import confidence_levels
from storage.config_files import load_confidence_config, load_settings
from storage.duckdb_store import DuckDBStore
from storage.errors import NoInputFilesError, StalePlanError
from storage.parquet_export import export_scores
from storage.readers import FileFormat
from storage.registry import held_store
from storage.summary_store import run_domains
from transforms.config.confidence import ConfidenceConfig
from transforms.config.scoring import Settings
from transforms.summary import RunSummary, build_summary

__all__ = ["score_run", "score_traces", "scoring_run", "summarise"]


def scoring_run(
    store: DuckDBStore, flow: str, settings: Settings, *, embed: bool, recover: bool
) -> RunSteps:
    """A run of a scoring flow, logged with the settings that change scores."""
    return RunSteps(
        store,
        flow,
        config=settings.model_dump(mode="json"),
        config_hash=settings.scoring_hash(),
        model=settings.embedding.model_key() if embed else None,
        recover=recover,
    )


def _fan_out(run: Any, config: str | None, settings: Settings) -> dict[str, int]:
    """Embedding and replay on a Dask cluster (a Prefect subflow with a DaskTaskRunner)."""
    from pipelines.fanout import dask_runner, embed_and_replay

    runner: Any = dask_runner(settings.execution)
    result: dict[str, int] = embed_and_replay.with_options(task_runner=runner)(run, config)
    return result


def _commit_on_workers(store: DuckDBStore, run: Run, settings: Settings) -> dict[str, int]:
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


def _plan_to_commit(steps: RunSteps, settings: Settings, embed: bool, config: str | None) -> None:
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
    settings: Settings,
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
    if confidence is None:
        return
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
    holds = store.held_so_far()
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


def _delivered(paths: list[str], file_format: FileFormat | None, empty_ok: bool) -> list[str]:
    """The paths a run reads. A path that names nothing stops the run here; with `empty_ok`, a
    folder or glob pattern that holds no input file yet is left out instead, and a run left
    with none is nothing to do (no run recorded; a path that does not exist is still an error)."""
    if not empty_ok:
        staging.input_files(paths, file_format)
        return paths
    kept = []
    for path in paths:
        try:
            staging.input_files([path], file_format)
        except NoInputFilesError:
            continue
        kept.append(path)
    return kept


def _nothing_delivered(paths: list[str]) -> RunSummary:
    """The summary of a scheduled run whose export folders hold no file yet: nothing to do,
    no run recorded, and a note that says so (a completed flow run, not a failed one)."""
    markdown = (
        "# tracegrade: nothing to do\n\nNo trace file has been delivered yet to "
        + ", ".join(f"`{path}`" for path in paths)
        + " (the folders exist and hold no input file); nothing was read or written.\n"
    )
    run_logger().info(markdown.strip())
    publish_markdown(markdown, "score-traces-summary", "tracegrade run summary: nothing to do")
    empty = pl.DataFrame()
    return RunSummary("", "completed", {"files_read": 0}, {}, empty, empty, markdown)


def score_traces(
    paths: list[str],
    db: str = "tracegrade.duckdb",
    config: str | None = None,
    no_embedder: bool = False,
    force: bool = False,
    confidence_config: str | None = None,
    judge_config: str | None = None,
    input_format: str = "auto",
    format_config: str | None = None,
    empty_ok: bool = False,
    chat_config: str | None = None,
) -> RunSummary:
    """Score trace exports (files, folders or globs) into the DuckDB file `db`.

    Args:
        paths: trace exports in the formats of docs/formats.md.
        db: the DuckDB file; created when missing.
        config: a TOML configuration file; None uses the defaults.
        no_embedder: score without embeddings (N = 0.5 for every trace).
        force: read files again even when the ledger has them with the same content.
        confidence_config: a confidence TOML file (docs/confidence.md); None: the defaults.
        judge_config: an evaluator.toml: the stored traces are judged after scoring (else
            the summary says why the judge was skipped).
        input_format: "auto" (each file's format from its content) or a format of
            `storage.formats.FORMATS` ("traces", "otel", "chat"; docs/formats.md).
        format_config, chat_config: TOML files of the OTel and chat mapping keys.
        empty_ok: a folder or glob with no file yet is left out (a night may deliver none).
    """
    settings = load_settings(config)
    confidence = load_confidence_config(confidence_config)
    file_format = formats.file_format(input_format, format_config, chat_config)
    if not (delivered := _delivered(paths, file_format, empty_ok)):
        return _nothing_delivered(paths)
    embed = settings.embedding.enabled and not no_embedder
    with (
        held_store(db) as store,
        scoring_run(store, "score_traces", settings, embed=embed, recover=True) as steps,
    ):
        levels = StagedLevels(confidence, steps.run.run_id, steps.run.path(STAGED_LEVELS))
        steps.step(
            "read and validate",
            staging.stage_inputs,
            store,
            steps.run,
            delivered,
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
    summary.markdown += "\n" + _judged(db, judge_config)
    return summary


def _judged(db: str, judge_config: str | None) -> str:
    """The night's judge step, its report; imported once the run has ended (a run that judges
    nothing need not load the judge's machinery to start)."""
    from pipelines.judge.flow import judge_after_scoring

    return judge_after_scoring(db, judge_config).markdown
