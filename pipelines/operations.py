"""The `score_operations` flow: eval cases of block-edit workflows in, scores in DuckDB out.

read and hash cases -> score the new and changed ones -> commit -> report
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import polars as pl
from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from storage.duckdb_store import RunHandle, RunRecord
from storage.operations_store import (
    case_hashes,
    commit_operation_results,
    ensure_operations_schema,
    latest_operation_results,
    read_eval_cases,
    stored_case_hashes,
)
from storage.registry import held_store, store_for
from tracegrade.operations_config import OperationsConfig, load_scorer_set
from tracegrade.operations_report import OperationsReport, build_operations_report
from transforms.operations.model import CASE_SCHEMA
from transforms.operations.scoring import score_cases

__all__ = ["OperationsRun", "commit", "score_operations", "score_staged", "stage_cases"]

CASES, CASE_ROWS, SCORE_ROWS, FILES = (
    "cases.parquet",
    "operation_cases.parquet",
    "operation_scores.parquet",
    "files.parquet",
)

_task = task(cache_policy=NO_CACHE, persist_result=False)


@dataclass(frozen=True)
class OperationsRun:
    """A run's identity, its scorer set and where it keeps its intermediate files."""

    db: str
    run_id: str
    run_seq: int
    work_dir: str
    scorers: str | None
    scorer_set: str

    @property
    def handle(self) -> RunHandle:
        """The run as the store knows it."""
        return RunHandle(self.run_id, self.run_seq)

    def path(self, name: str) -> Path:
        """A file in the run's work folder."""
        return Path(self.work_dir) / name

    def config(self) -> OperationsConfig:
        """The run's scorer set, loaded again (tasks pass names, not objects)."""
        return load_scorer_set(self.scorers, self.scorer_set)


@_task
def stage_cases(run: OperationsRun, paths: list[str], force: bool) -> dict[str, int]:
    """Read the case files, hash each case, and mark those to score.

    A case is skipped when its latest result for this scorer set has the same case hash and
    set hash, unless `force`.
    """
    config = run.config()
    read = read_eval_cases(paths)
    cases = read.cases.with_columns(case_hashes(read.cases))
    todo = pl.lit(True)
    if not force:
        stored = stored_case_hashes(store_for(run.db), config.name, config.config_hash)
        seen = stored.with_columns(_seen=pl.lit(True))
        cases = cases.join(seen, on=["case_id", "case_hash"], how="left", maintain_order="left")
        todo = pl.col("_seen").is_null()
    cases = cases.with_columns(todo=todo).drop("_seen", strict=False)
    cases.write_parquet(run.path(CASES))
    read.files.with_columns(run_id=pl.lit(run.run_id)).write_parquet(run.path(FILES))
    scored = int(cases["todo"].sum())
    return {
        "files_read": read.files.height,
        "rows_read": cases.height,
        "rows_unchanged": cases.height - scored,
    }


@_task
def score_staged(run: OperationsRun) -> dict[str, int]:
    """Score the staged cases with the run's scorer set."""
    config = run.config()
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


@_task
def commit(run: OperationsRun) -> None:
    """Write the run's rows in one transaction."""
    commit_operation_results(
        store_for(run.db),
        run.path(CASE_ROWS),
        run.path(SCORE_ROWS),
        pl.read_parquet(run.path(FILES)),
    )


def _start(db: str, config: OperationsConfig, scorers: str | None) -> OperationsRun:
    store = store_for(db)
    ensure_operations_schema(store)
    handle = store.begin_run(
        "score_operations",
        version=version("tracegrade"),
        model=None,
        config={"scorer_set": config.name, "scorers": config.entries},
        config_hash=config.config_hash,
    )
    work_dir = store.path.parent / f".{store.path.name}.work" / handle.run_id
    work_dir.mkdir(parents=True, exist_ok=True)
    return OperationsRun(
        str(store.path), handle.run_id, handle.run_seq, str(work_dir), scorers, config.name
    )


def _report(
    run: OperationsRun, config: OperationsConfig, counts: dict[str, int], timings: dict[str, float]
) -> OperationsReport:
    case_ids = pl.read_parquet(run.path(CASES), columns=["case_id"])["case_id"]
    cases, scores = latest_operation_results(store_for(run.db), config.name, case_ids)
    return build_operations_report(run.run_id, config, counts, timings, cases, scores)


@flow(name="score_operations", persist_result=False, log_prints=False)
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
    counts: dict[str, int] = {}
    timings: dict[str, float] = {}
    with held_store(db) as store:
        run = _start(db, config, scorers)
        try:
            for name, step in (
                ("read", lambda: stage_cases(run, paths, force)),
                ("score", lambda: score_staged(run)),
                ("commit", lambda: commit(run)),
            ):
                started = time.perf_counter()
                counts.update(step() or {})
                timings[name] = time.perf_counter() - started
            report = _report(run, config, counts, timings)
            store.finish_run(run.handle, RunRecord("completed", counts, timings, report.markdown))
        except BaseException as exc:
            store.finish_run(run.handle, RunRecord("failed", counts, timings, "", repr(exc)))
            raise
        finally:
            shutil.rmtree(run.work_dir, ignore_errors=True)
    create_markdown_artifact(
        report.markdown, key="score-operations-report", description="operation scores report"
    )
    return report
