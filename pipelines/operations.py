"""The `score_operations` flow: eval cases of block-edit workflows in, scores in DuckDB out.

read and hash cases -> score the new and changed ones -> commit -> report
"""

from __future__ import annotations

import polars as pl

from pipelines.report import publish_run
from pipelines.runs import Run, RunSteps
from storage.config_files import load_scorer_set
from storage.operations.cases import expand_case_paths, read_eval_cases
from storage.operations.store import (
    case_hashes,
    commit_operation_results,
    latest_operation_results,
    stored_case_hashes,
)
from storage.store.duckdb_store import DuckDBStore
from storage.store.registry import held_store
from transforms.config.operations import OperationsConfig
from transforms.operations.model import CASE_SCHEMA
from transforms.operations.run_summary import OperationsReport, build_operations_report, case_blocks
from transforms.operations.scoring import score_cases

__all__ = ["commit", "score_operations", "score_staged"]

CASES, CASE_ROWS, SCORE_ROWS, FILES, QUARANTINE = (
    "cases.parquet",
    "operation_cases.parquet",
    "operation_scores.parquet",
    "files.parquet",
    "quarantine.parquet",
)


def stage_cases(
    store: DuckDBStore, run: Run, config: OperationsConfig, paths: list[str], force: bool
) -> dict[str, int]:
    """Read the case files, hash each case, and mark those to score.

    A case is skipped when its latest result for this scorer set has the same case hash and
    set hash, unless `force`.
    """
    read = read_eval_cases(paths)
    cases = read.cases.with_columns(case_hashes(read.cases))
    todo = pl.lit(True)
    if not force:
        stored = stored_case_hashes(store, config.name, config.config_hash)
        seen = stored.with_columns(_seen=pl.lit(True))
        cases = cases.join(seen, on=["case_id", "case_hash"], how="left", maintain_order="left")
        todo = pl.col("_seen").is_null()
    cases = cases.with_columns(todo=todo).drop("_seen", strict=False)
    cases.write_parquet(run.path(CASES))
    read.files.with_columns(run_id=pl.lit(run.run_id)).write_parquet(run.path(FILES))
    hashes = dict(zip(read.files["path"], read.files["content_hash"], strict=True))
    read.rejected.select(
        run_id=pl.lit(run.run_id),
        file=pl.col("source_file"),
        file_hash=pl.col("source_file").replace_strict(hashes, return_dtype=pl.String),
        row_number="row_number",
        case_id="case_id",
        rule="rule",
        reason="reason",
    ).write_parquet(run.path(QUARANTINE))
    scored = int(cases["todo"].sum())
    return {
        "files_read": read.files.height,
        "files_quarantined": int(read.rejected["row_number"].is_null().sum()),
        "rows_read": cases.height + int(read.rejected["row_number"].is_not_null().sum()),
        "rows_quarantined": int(read.rejected["row_number"].is_not_null().sum()),
        "rows_unchanged": cases.height - scored,
    }


def score_staged(run: Run, config: OperationsConfig) -> dict[str, int]:
    """Score the staged cases with the run's scorer set."""
    staged = pl.read_parquet(run.path(CASES)).filter(pl.col("todo"))
    scored = score_cases(staged.select(list(CASE_SCHEMA)), config.scorer_set)
    identity = {
        "run_id": pl.lit(run.run_id),
        "run_seq": pl.lit(run.run_seq, dtype=pl.Int64),
        "scorer_set": pl.lit(config.name),
    }
    scored.cases.with_columns(
        **identity,
        set_hash=pl.lit(config.config_hash),
        case_hash=staged["case_hash"],
        source_file=staged["source_file"],
        row_number=staged["row_number"],
    ).write_parquet(run.path(CASE_ROWS))
    scored.scores.with_columns(**identity).write_parquet(run.path(SCORE_ROWS))
    return {"rows_scored": staged.height}


def commit(store: DuckDBStore, run: Run) -> None:
    """Write the run's rows in one transaction."""
    commit_operation_results(
        store,
        run.path(CASE_ROWS),
        run.path(SCORE_ROWS),
        pl.read_parquet(run.path(FILES)),
        run.path(QUARANTINE),
    )


def _report(steps: RunSteps, config: OperationsConfig) -> OperationsReport:
    run = steps.run
    case_ids = pl.read_parquet(run.path(CASES), columns=["case_id"])["case_id"]
    cases, scores = latest_operation_results(steps.store, config.name, case_ids)
    tally = steps.tally
    quarantine = pl.read_parquet(run.path(QUARANTINE), columns=["rule", "reason"])
    staged = pl.read_parquet(run.path(CASES), columns=["case_id", "original_blocks"])
    return build_operations_report(
        run.run_id,
        config,
        tally.counts,
        tally.timings,
        cases,
        scores,
        quarantine,
        case_blocks(staged),
    )


def score_operations(
    paths: list[str],
    db: str = "tracegrade.duckdb",
    scorers: str | None = None,
    scorer_set: str | None = None,
    force: bool = False,
) -> OperationsReport:
    """Score eval cases of block-edit workflows (files, folders or globs) into `db`.

    Args:
        paths: JSONL or Parquet eval case files (docs/operations.md).
        db: the DuckDB file; created when missing.
        scorers: a TOML file of scorer sets; None offers the presets only.
        scorer_set: the set to apply; None takes the file's default_set (else `standard`).
        force: score again cases already scored with the same set and content.
    """
    config = load_scorer_set(scorers, scorer_set)
    expand_case_paths(paths)  # a path that names nothing stops the run before the database opens
    with (
        held_store(db) as store,
        RunSteps(
            store,
            "score_operations",
            config={"scorer_set": config.name, "scorers": config.entries},
            config_hash=config.config_hash,
        ) as steps,
    ):
        run = steps.run
        steps.step("read", stage_cases, store, run, config, paths, force)
        steps.step("score", score_staged, run, config)
        steps.step("commit", commit, store, run)
        report = _report(steps, config)
        steps.finish("completed", report.markdown)
    publish_run(db, report.markdown, "score-operations-report", "operation scores report")
    return report
