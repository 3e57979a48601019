"""The `confidence_traces` flow: an intervention level for every trace, with its reason.

derived mode:  stored traces without a current level -> derive factors -> score -> commit
factors mode:  factors files -> check, quarantine -> agreement/LLM factors -> score -> commit
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

from pipelines import confidence_stages as stages
from storage.confidence_store import ensure_confidence_schema
from storage.duckdb_store import RunHandle, RunRecord
from storage.registry import held_store, store_for
from tracegrade.confidence_config import ConfidenceConfig, load_confidence_config
from tracegrade.confidence_report import ConfidenceReport, build_confidence_report

__all__ = [
    "ConfidenceRun",
    "commit",
    "confidence_traces",
    "derive",
    "score_factors",
    "stage_factors",
]

_task = task(cache_policy=NO_CACHE, persist_result=False)

_LOGGED = {"files_read", "rows_read", "rows_scored", "rows_quarantined", "rows_unchanged"}


@dataclass(frozen=True)
class ConfidenceRun:
    """A run's identity, its configuration file and its work folder."""

    db: str
    run_id: str
    run_seq: int
    work_dir: str
    config_path: str | None

    @property
    def handle(self) -> RunHandle:
        """The run as the store knows it."""
        return RunHandle(self.run_id, self.run_seq)

    @property
    def folder(self) -> Path:
        """The run's work folder."""
        return Path(self.work_dir)

    def config(self) -> ConfidenceConfig:
        """The run's configuration, loaded again (tasks pass paths, not objects)."""
        return load_confidence_config(self.config_path)


@_task
def derive(run: ConfidenceRun, force: bool) -> dict[str, int]:
    """Derived mode: score stored traces whose level is missing or stale, and commit."""
    counts = stages.derived_stage(
        store_for(run.db), run.run_id, run.folder, run.config(), force=force
    )
    return {
        "rows_scored": counts["confidence_traces"],
        "rows_unchanged": counts["confidence_unchanged"],
    }


@_task
def stage_factors(run: ConfidenceRun, paths: list[str], force: bool) -> dict[str, int]:
    """Factors mode: read and check the factors files, keep changed traces."""
    return stages.stage_factors(store_for(run.db), paths, run.folder, run.config(), force=force)


@_task
def score_factors(run: ConfidenceRun, embed: bool) -> dict[str, int]:
    """Fill source agreement and LLM factors, then score the staged rows."""
    config = run.config()
    rows = pl.read_parquet(run.folder / stages.FACTORS_ROWS)
    embedder = None
    if embed:
        from tracegrade.config import EmbeddingConfig
        from tracegrade.embedding import SentenceEmbedder

        embedder = SentenceEmbedder(EmbeddingConfig())
    filled = stages.fill_model_factors(rows, embedder, config.llm.model, config.llm.timeout_s)
    fell_back = int(filled["llm_self_eval_fallback"].sum() or 0) + int(
        filled["query_coverage_fallback"].sum() or 0
    )
    scored = stages.score_factor_rows(filled, config, run.run_id, run.folder)
    return {"rows_scored": scored, "llm_fallbacks": fell_back}


@_task
def commit(run: ConfidenceRun) -> None:
    """Write the run's rows in one transaction."""
    stages.commit_stage(store_for(run.db), run.folder, run.run_id)


def _start(db: str, config: ConfidenceConfig, config_path: str | None) -> ConfidenceRun:
    store = store_for(db)
    ensure_confidence_schema(store)
    handle = store.begin_run(
        "confidence_traces",
        version=version("tracegrade"),
        model=config.llm.model,
        config=config.model_dump(mode="json"),
        config_hash=config.config_hash(),
    )
    work_dir = store.path.parent / f".{store.path.name}.work" / handle.run_id
    work_dir.mkdir(parents=True, exist_ok=True)
    return ConfidenceRun(str(store.path), handle.run_id, handle.run_seq, str(work_dir), config_path)


@flow(name="confidence_traces", persist_result=False, log_prints=False)
def confidence_traces(
    db: str = "tracegrade.duckdb",
    factors: list[str] | None = None,
    config: str | None = None,
    no_embedder: bool = False,
    force: bool = False,
) -> ConfidenceReport:
    """Give traces a confidence and an intervention level, stored in `db`.

    Args:
        db: the DuckDB file.
        factors: factors files or folders (Parquet, JSONL); None: derived mode over the
            traces stored in `db`.
        config: a confidence TOML file; None uses the defaults.
        no_embedder: factors mode: leave source agreement missing where it is not given.
        force: score again traces whose input and configuration are unchanged.
    """
    settings = load_confidence_config(config)
    counts: dict[str, int] = {}
    timings: dict[str, float] = {}
    source = "derived" if not factors else "factors"
    with held_store(db) as store:
        run = _start(db, settings, config)
        steps = (
            [("derive", lambda: derive(run, force))]
            if not factors
            else [
                ("read", lambda: stage_factors(run, list(factors), force)),
                ("score", lambda: score_factors(run, not no_embedder)),
                ("commit", lambda: commit(run)),
            ]
        )
        try:
            for name, step in steps:
                started = time.perf_counter()
                counts.update(step() or {})
                timings[name] = time.perf_counter() - started
            report = build_confidence_report(store, run.run_id, source, counts, timings)
            logged = {k: v for k, v in counts.items() if k in _LOGGED}
            store.finish_run(run.handle, RunRecord("completed", logged, timings, report.markdown))
        except BaseException as exc:
            store.finish_run(run.handle, RunRecord("failed", {}, timings, "", repr(exc)))
            raise
        finally:
            shutil.rmtree(run.work_dir, ignore_errors=True)
    create_markdown_artifact(
        report.markdown, key="confidence-traces-report", description="confidence levels report"
    )
    return report
