"""The `confidence_traces` flow: an intervention level for every trace, with its reason.

derived mode:  stored traces without a current level -> derive factors -> score -> commit
factors mode:  factors files -> check, quarantine -> agreement/LLM factors -> score -> commit
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines import confidence_stages as stages
from pipelines.report import publish_run
from pipelines.runs import RunSteps
from storage.confidence.store import run_levels, run_quarantine_rules
from storage.config_files import load_confidence_config
from storage.store.duckdb_store import DuckDBStore
from storage.store.registry import held_store
from transforms.confidence.run_summary import ConfidenceReport, build_confidence_report
from transforms.config.confidence import ConfidenceConfig

__all__ = ["confidence_traces", "derive"]


def derive(
    store: DuckDBStore, run_id: str, folder: Path, config: ConfidenceConfig, force: bool
) -> dict[str, int]:
    """Derived mode: score stored traces whose level is missing or stale, and commit."""
    counts = stages.derived_stage(store, run_id, folder, config, force=force)
    return {
        "rows_scored": counts["confidence_traces"],
        "rows_unchanged": counts["confidence_unchanged"],
    }


def score_factors(
    run_id: str, folder: Path, config: ConfidenceConfig, embed: bool
) -> dict[str, int]:
    """Fill source agreement and LLM factors of the staged rows, then score them."""
    rows = pl.read_parquet(folder / stages.FACTORS_ROWS)
    embedder = None
    if embed:
        from pipelines.embedder import SentenceEmbedder
        from transforms.config.scoring import EmbeddingConfig

        embedder = SentenceEmbedder(EmbeddingConfig())
    filled = stages.fill_model_factors(rows, embedder, config.llm.model, config.llm.timeout_s)
    fell_back = int(filled["llm_self_eval_fallback"].sum() or 0) + int(
        filled["query_coverage_fallback"].sum() or 0
    )
    scored = stages.score_factor_rows(filled, config, run_id, folder)
    return {"rows_scored": scored, "llm_fallbacks": fell_back}


def _settings_line(settings: ConfidenceConfig) -> str:
    """Which level thresholds (and factor weights, where they are not GRACE's) a run used, in
    words: a fitted profile by its name."""
    t = settings.thresholds
    cuts = f"silent {t.silent:g}, notify {t.notify:g}, confirm {t.confirm:g}"
    changed = settings.weights.model_dump(exclude_defaults=True)
    weights = (
        " Factor weights: "
        + ", ".join(f"{name} {value:g}" for name, value in changed.items())
        + " (the others GRACE's)."
        if changed
        else ""
    )
    if settings.profile:
        return f"Level thresholds: the profile {settings.profile!r} ({cuts}).{weights}"
    return f"Level thresholds: {cuts}.{weights}"


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
        no_embedder: factors mode: do not embed source_answers; two or more answers without a
            given agreement get 0.5, GRACE's value when the agreement cannot be computed.
        force: score again traces whose input and configuration are unchanged.
    """
    settings = load_confidence_config(config)
    source = "derived" if not factors else "factors"
    with (
        held_store(db) as store,
        RunSteps(
            store,
            "confidence_traces",
            config=settings.model_dump(mode="json"),
            config_hash=settings.config_hash,
            model=settings.llm.model,
        ) as steps,
    ):
        run_id, folder = steps.run.run_id, Path(steps.run.work_dir)
        if not factors:
            steps.step("derive", derive, store, run_id, folder, settings, force)
        else:
            steps.step(
                "read", stages.stage_factors, store, list(factors), folder, settings, force=force
            )
            steps.step("score", score_factors, run_id, folder, settings, not no_embedder)
            steps.step("commit", stages.commit_stage, store, folder, run_id)
        tally = steps.tally
        report = build_confidence_report(
            run_id,
            source,
            tally.counts,
            tally.timings,
            run_levels(store, run_id),
            run_quarantine_rules(store, run_id),
            _settings_line(settings),
        )
        steps.finish("completed", report.markdown)
    publish_run(db, report.markdown, "confidence-traces-report", "confidence levels report")
    return report
