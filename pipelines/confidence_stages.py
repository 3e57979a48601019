"""The stages of a confidence run as plain functions of the store, paths and keys.

Derived mode scores stored traces whose level is missing or stale; factors mode scores the
traces of an explicit factors table. Both write one Parquet file of steps and one of traces,
then commit them in one transaction (storage.confidence.store).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from storage.confidence.factors import FACTORS_INPUT_SCHEMA, read_factors_table
from storage.confidence.store import (
    commit_confidence,
    split_staged_levels,
    stale_derived_ids,
    stale_derived_traces,
    stored_input_hashes,
)
from storage.store.duckdb_store import DuckDBStore
from storage.store.hashing import sha256_hex
from storage.store.work_files import parquet_batches
from transforms.confidence.agreement import SourceAgreementCalculator
from transforms.confidence.batch import FACTOR_SCHEMA, step_scores, trace_levels
from transforms.confidence.derived import derived_factors, outcome_caps
from transforms.confidence.inputs import original_factor_columns
from transforms.confidence.prompts import FALLBACK_SCORE
from transforms.config.confidence import ConfidenceConfig, LLMConfig
from transforms.embedding import Embedder

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = [
    "COMPUTED_STEPS",
    "COMPUTED_TRACES",
    "DERIVED_CHUNK_TRACES",
    "FACTORS_ROWS",
    "QUARANTINE",
    "StagedParts",
    "commit_stage",
    "derived_stage",
    "fill_model_factors",
    "level_frames",
    "score_factor_rows",
    "stage_factors",
    "write_level_part",
]

FACTORS_ROWS, QUARANTINE, STALE, STEPS, TRACES = (
    "confidence_factors.parquet",
    "confidence_quarantine.parquet",
    "confidence_stale.parquet",
    "confidence_steps-*.parquet",
    "confidence_traces-*.parquet",
)
"""Work files of a run; STEPS and TRACES are written in numbered parts (`_part`); STALE holds
the ids derived mode scores, read back a chunk at a time."""

COMPUTED_STEPS, COMPUTED_TRACES, COVERED = (
    "computed_steps-*.parquet",
    "computed_traces-*.parquet",
    "confidence_covered.parquet",
)
"""Levels a scoring run computed while reading (numbered parts keyed by `_order`), and the
trace_id and `_order` of the stale traces they cover."""

DERIVED_CHUNK_TRACES = 10_000
"""Derived mode scores stored traces this many at a time, so memory stays bounded whatever
the database holds (`confidence --force` over 1,000,000 realistic traces peaks at 1.06 GiB,
against 1.28 GiB with 25,000 and 2.4-2.8 GiB with 100,000, at the same speed;
docs/performance.md); `commit_stage` writes several parts per transaction."""


def _part(pattern: str, part: int) -> str:
    return pattern.replace("*", f"{part:05d}")


def level_frames(
    factors: pl.LazyFrame,
    config: ConfidenceConfig,
    *,
    ordered: bool = False,
    caps: pl.LazyFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The scored plan steps of `factors` and their traces' levels (no identity columns)."""
    scored = step_scores(factors, config).collect()
    traces = trace_levels(scored.lazy(), config, ordered=ordered, caps=caps).collect()
    return scored, traces


def write_level_part(
    scored: pl.DataFrame,
    traces: pl.DataFrame,
    config: ConfidenceConfig,
    source: str,
    run_id: str,
    paths: tuple[Path, Path],
) -> int:
    """Add identity columns to `level_frames`' output (`traces` with its input_hash) and write
    them to `paths` (steps, traces); returns the traces written."""
    identity = {
        "source": pl.lit(source),
        "run_id": pl.lit(run_id),
        "computed_at": pl.lit(datetime.now(UTC), pl.Datetime("us", "UTC")),
    }
    fallbacks = ("llm_self_eval_fallback", "query_coverage_fallback")
    scored.with_columns(
        **identity,
        **{c: pl.lit(None, pl.Boolean) for c in fallbacks if c not in scored.columns},
    ).drop("penalty_code").write_parquet(paths[0])
    traces.with_columns(**identity, config_hash=pl.lit(config.config_hash)).write_parquet(paths[1])
    return traces.height


def part_paths(folder: Path, part: int) -> tuple[Path, Path]:
    """Part `part` of a run's STEPS and TRACES in `folder`."""
    return folder / _part(STEPS, part), folder / _part(TRACES, part)


def _results(
    factors: pl.LazyFrame,
    hashes: pl.DataFrame,
    config: ConfidenceConfig,
    source: str,
    run_id: str,
    folder: Path,
    *,
    ordered: bool = False,
    caps: pl.LazyFrame | None = None,
    part: int = 0,
) -> int:
    """Score `factors`, add identity columns, write part `part` of STEPS and TRACES; returns
    traces scored."""
    scored, traces = level_frames(factors, config, ordered=ordered, caps=caps)
    traces = traces.join(hashes, on="trace_id", how="left")
    return write_level_part(scored, traces, config, source, run_id, part_paths(folder, part))


@dataclass(frozen=True)
class StagedParts:
    """Derived levels a scoring run computed while it read its input
    (`pipelines.staged_levels.StagedLevels`): the folder of their parts (COMPUTED_STEPS and
    COMPUTED_TRACES, keyed by the rows' staging order `_order`), and the run's file of fresh
    traces (trace_id and `_order` of the new and changed ones it stored)."""

    folder: Path
    fresh: Path


def derived_stage(
    store: DuckDBStore,
    run_id: str,
    work_dir: Path,
    config: ConfidenceConfig,
    *,
    force: bool = False,
    staged: StagedParts | None = None,
) -> dict[str, int]:
    """Derive factors for every stored trace without a current derived level, score, commit.
    With `staged`, the levels the run computed while reading are taken for the traces it
    stored itself, and only the others are read back from the database.

    Returns confidence_traces (levels written) and confidence_unchanged (kept as stored).
    """
    total = store.trace_count()
    stale = work_dir / STALE
    if not stale_derived_ids(store, config.config_hash, stale, force=force):
        return {"confidence_traces": 0, "confidence_unchanged": int(total)}
    parts, scored = 0, 0
    if staged is not None and staged.fresh.exists() and any(staged.folder.glob(COMPUTED_TRACES)):
        parts, scored = _take_staged(store, staged, config, run_id, work_dir)
    scored += sum(
        _derived_part(store, ids, config, run_id, work_dir, part)
        for part, ids in enumerate(parquet_batches(stale, DERIVED_CHUNK_TRACES), start=parts)
    )
    commit_stage(store, work_dir, run_id)
    return {"confidence_traces": scored, "confidence_unchanged": int(total) - scored}


def _take_staged(
    store: DuckDBStore, staged: StagedParts, config: ConfidenceConfig, run_id: str, work_dir: Path
) -> tuple[int, int]:
    """Write as the run's parts the staged levels of the stale traces the run stored itself
    (fresh, with the content the level was computed from), and leave in STALE only the stale
    traces still without one; returns (parts written, traces). Only work files are read: the
    database file is not attached."""
    covered = work_dir / COVERED
    split_staged_levels(
        store, staged.folder / COMPUTED_TRACES, staged.fresh, work_dir / STALE, covered
    )
    parts, taken = 0, 0
    for traces_part in sorted(staged.folder.glob(COMPUTED_TRACES)):
        steps_part = traces_part.with_name(traces_part.name.replace("traces", "steps"))
        counted = pl.scan_parquet(traces_part).select(
            rows=pl.len(), lo=pl.col("_order").min(), hi=pl.col("_order").max()
        )
        rows, lo, hi = counted.collect().row(0)
        keep = pl.scan_parquet(covered).filter(pl.col("_order").is_between(lo, hi))
        kept = keep.select(pl.len()).collect().item()
        if not kept:
            continue
        steps_to, traces_to = part_paths(work_dir, parts)
        if kept == rows:  # every row of the part: it is the run's part as it is
            steps_part.replace(steps_to)
            traces_part.replace(traces_to)
        else:
            for source, target in ((steps_part, steps_to), (traces_part, traces_to)):
                pl.scan_parquet(source).join(
                    keep, on=["_order", "trace_id"], how="semi"
                ).sink_parquet(target)
        taken += kept
        parts += 1
    return parts, taken


def _derived_part(
    store: DuckDBStore,
    ids: pl.DataFrame,
    config: ConfidenceConfig,
    run_id: str,
    work_dir: Path,
    part: int,
) -> int:
    """Read the stored traces of `ids`, derive and score their factors, write part `part`;
    returns traces scored. (A function of its own, so a chunk's rows are freed before the next
    chunk, and the commit, read theirs.)"""
    stale = stale_derived_traces(store, ids).lazy()
    store.release()  # scoring the chunk does not need the file
    hashes = stale.select("trace_id", input_hash="content_hash").collect()
    return _results(
        derived_factors(stale, config),
        hashes,
        config,
        "derived",
        run_id,
        work_dir,
        ordered=True,
        caps=outcome_caps(stale, config.derived),
        part=part,
    )


def _trace_hashes(rows: pl.DataFrame) -> pl.DataFrame:
    """trace_id and input_hash: SHA-256 of the trace's rows (every input column) in step order."""
    encoded = (
        rows.sort("trace_id", "step_index")
        .select("trace_id", row=pl.struct(list(FACTORS_INPUT_SCHEMA)).struct.json_encode())
        .group_by("trace_id", maintain_order=True)
        .agg(pl.col("row").str.join("\n"))
    )
    return encoded.select("trace_id", input_hash=sha256_hex(encoded["row"]))


def stage_factors(
    store: DuckDBStore,
    paths: list[str],
    work_dir: Path,
    config: ConfidenceConfig,
    *,
    force: bool = False,
) -> dict[str, int]:
    """Read and check factors files; keep the traces whose rows or configuration changed.

    Writes FACTORS_ROWS (rows to score, with input_hash) and QUARANTINE (rejected rows).
    """
    read = read_factors_table(paths)
    rows = read.rows.join(_trace_hashes(read.rows), on="trace_id", how="left")
    unchanged = 0
    if not force:
        stored = stored_input_hashes(store, "factors").filter(
            pl.col("config_hash") == config.config_hash
        )
        keep = rows.join(stored, on=["trace_id", "input_hash"], how="anti")
        unchanged = rows["trace_id"].n_unique() - keep["trace_id"].n_unique()
        rows = keep
    rows.write_parquet(work_dir / FACTORS_ROWS)
    read.quarantine.write_parquet(work_dir / QUARANTINE)
    return {
        "files_read": read.files.height,
        "rows_read": read.rows.height + read.quarantine.height,
        "rows_quarantined": read.quarantine.height,
        "rows_unchanged": unchanged,
    }


def _source_agreement(rows: pl.DataFrame, embedder: Embedder | None) -> pl.DataFrame:
    """Fill missing source agreement from source_answers: SourceAgreementCalculator's value
    (1.0 for fewer than two answers, without the model); without an embedder, two or more
    answers get FALLBACK_SCORE, GRACE's value when the agreement cannot be computed."""
    answers = pl.col("source_answers")
    need = rows.select(pl.col("source_agreement").is_null() & answers.is_not_null()).to_series()
    if not need.any():
        return rows
    sets = rows.filter(need)["source_answers"].to_list()
    if embedder is not None:
        values = SourceAgreementCalculator(embedder).calculate_many(sets)
    else:
        values = np.array([1.0 if len(s) < 2 else FALLBACK_SCORE for s in sets])
    computed = np.full(rows.height, np.nan)
    computed[need.arg_true().to_numpy()] = values
    filled = pl.Series(computed, dtype=pl.Float64).fill_nan(None)
    return rows.with_columns(source_agreement=pl.coalesce("source_agreement", filled))


def fill_model_factors(
    rows: pl.DataFrame, embedder: Embedder | None, llm: Model | str | None, timeout_s: float = 30.0
) -> pl.DataFrame:
    """The rows with the conveniences folded into GRACE's fields (original_factor_columns),
    missing source agreement computed from source_answers (with `embedder`, in one batch) and,
    with `llm`, missing self-confidence and query coverage (rows with query and answer).

    Adds llm_self_eval_fallback and query_coverage_fallback (see
    pipelines.confidence_llm.llm_factors).
    """
    # pydantic-ai and the judge's request code load only here: a run without factors files
    # (every derived-mode run) does not pay their 0.8 s of imports.
    from pipelines.confidence_llm import llm_factors

    folded = _source_agreement(original_factor_columns(rows), embedder)
    return llm_factors(folded, llm, LLMConfig(timeout_s=timeout_s))


def score_factor_rows(
    rows: pl.DataFrame, config: ConfidenceConfig, run_id: str, work_dir: Path
) -> int:
    """Score staged factor rows (after fill_model_factors); writes STEPS and TRACES."""
    factors = (
        rows.lazy()
        .with_columns(step_kind=pl.lit("factors"), source_step_id=pl.lit(None, pl.Int64))
        .select(
            *FACTOR_SCHEMA,
            "step_kind",
            "source_step_id",
            "llm_self_eval_fallback",
            "query_coverage_fallback",
        )
    )
    hashes = rows.select("trace_id", "input_hash").unique("trace_id")
    return _results(factors, hashes, config, "factors", run_id, work_dir)


def commit_stage(store: DuckDBStore, work_dir: Path, run_id: str) -> None:
    """Commit STEPS, TRACES and (when staged) QUARANTINE in one transaction."""
    quarantine = work_dir / QUARANTINE
    commit_confidence(
        store,
        work_dir / STEPS,
        work_dir / TRACES,
        quarantine if quarantine.exists() else None,
        run_id,
    )
