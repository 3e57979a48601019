"""Derived-mode confidence throughput: vectorized Polars against a per-row Python implementation.

Both sides read the same Parquet file (only the leaf columns derived mode needs: id, the
steps' step_id, type, tool name, input, content and output_summary, outcome.confidence and
result_summary, task.objective) and give every trace its
derived confidence, aggregate (weighted), level and reason with the default configuration; no
LLM factor, no embedder.

    tracegrade: pyarrow read -> Polars projection of steps -> derived_factors -> step_scores
                -> trace_levels -> collect
    baseline:   pyarrow read -> to_pylist -> reference_trace_confidence per row
                (ConfidenceCalculator.calculate per plan step, ConfidenceAggregator, decide_action)

Run: .venv/bin/python bench/bench_confidence.py [--n 1000000]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
from _common import (
    Check,
    Comparison,
    against_rows,
    begin,
    bench_args,
    end,
    lazy_frame,
    print_table,
    read_breakdown,
    read_leaves,
    save_result,
    synthetic_parquet,
    timed,
)

from transforms.confidence.batch import step_scores, trace_levels
from transforms.confidence.derived import derived_factors, outcome_caps
from transforms.confidence.per_trace import reference_trace_confidence
from transforms.config.confidence import ConfidenceConfig

TARGET_RATIO = 20.0
CONFIG = ConfidenceConfig()

LEAF_COLUMNS = [
    "id",
    "steps.list.element.step_id",
    "steps.list.element.type",
    "steps.list.element.tool.name",
    "steps.list.element.input",
    "steps.list.element.content",
    "steps.list.element.output_summary",
    "outcome.confidence",
    "outcome.result_summary",
    "task.objective",
]
"""Parquet leaf paths derived mode needs; nothing else is decoded."""


def trace_inputs(table: pa.Table) -> pl.LazyFrame:
    """trace_id, confidence, result_summary, objective and steps as list<struct{step_id, type,
    tool_name, input, content, output_summary}>."""
    step = pl.element().struct
    return lazy_frame(table).select(
        trace_id="id",
        confidence=pl.col("outcome").struct.field("confidence"),
        result_summary=pl.col("outcome").struct.field("result_summary"),
        objective=pl.col("task").struct.field("objective"),
        steps=pl.col("steps").list.eval(
            pl.struct(
                step_id=step.field("step_id"),
                type=step.field("type"),
                tool_name=step.field("tool").struct.field("name"),
                input=step.field("input"),
                content=step.field("content"),
                output_summary=step.field("output_summary"),
            )
        ),
    )


def vectorized(path: Path) -> pl.DataFrame:
    """Read, project, derive, score, aggregate, decide; the collected per-trace frame."""
    traces = trace_inputs(read_leaves(path, LEAF_COLUMNS))
    factors = derived_factors(traces, CONFIG)
    caps = outcome_caps(traces, CONFIG.derived)
    return trace_levels(step_scores(factors, CONFIG), CONFIG, ordered=True, caps=caps).collect()


def baseline(rows: list[dict[str, Any]]) -> list[tuple[str, float, str, str]]:
    """The object API one Python row (trace) at a time."""
    out = []
    for row in rows:
        steps: list[dict[str, Any]] = [
            {
                "step_id": step["step_id"],
                "type": step["type"],
                "tool_name": step["tool"]["name"] if step["tool"] else None,
                "input": step["input"],
                "content": step["content"],
                "output_summary": step["output_summary"],
            }
            for step in row["steps"]
        ]
        outcome = row["outcome"]
        result = reference_trace_confidence(
            steps,
            outcome["confidence"],
            CONFIG,
            outcome["result_summary"],
            row["task"]["objective"],
        )
        out.append((row["id"], result.aggregate, result.level.value, result.reason))
    return out


def breakdown(path: Path) -> dict[str, float]:
    """Where derived mode's vectorized time goes: each part materialized on its own, best of
    3, from the output of the part before."""
    parts, inputs = read_breakdown(path, LEAF_COLUMNS, trace_inputs)
    factors = timed(lambda: derived_factors(inputs.lazy(), CONFIG).collect())
    parts["derived_factors"] = factors.seconds
    scored = timed(lambda: step_scores(factors.result.lazy(), CONFIG).collect())
    parts["step_scores"] = scored.seconds
    parts["trace_levels"] = timed(
        lambda: trace_levels(
            scored.result.lazy(),
            CONFIG,
            ordered=True,
            caps=outcome_caps(inputs.lazy(), CONFIG.derived),
        ).collect()
    ).seconds
    return parts


def agreement(
    ours: pl.DataFrame, theirs: list[tuple[str, float, str, str]], n: int
) -> dict[str, Any]:
    """How far the two sides' results agree, under the keys the saved figures use.

    Returns max_abs_diff (of the aggregates), level_differences, reason_differences and
    missing (traces found on one side only).
    """
    reference = pl.DataFrame(
        theirs,
        schema={
            "trace_id": pl.String,
            "ref_aggregate": pl.Float64,
            "ref_level": pl.String,
            "ref_reason": pl.String,
        },
        orient="row",
    )
    joined = ours.join(reference, on="trace_id", how="full", coalesce=True)
    missing = int(joined["aggregate"].is_null().sum() + joined["ref_aggregate"].is_null().sum())
    diff = (joined["aggregate"] - joined["ref_aggregate"]).abs().fill_null(np.inf)
    max_diff = float(diff.max()) if n else 0.0  # type: ignore[arg-type]
    level_diff = int((joined["level"] != joined["ref_level"]).fill_null(True).sum())
    reason_diff = int((joined["reason"] != joined["ref_reason"]).fill_null(True).sum())
    return {
        "max_abs_diff": max_diff,
        "level_differences": level_diff,
        "reason_differences": reason_diff,
        "missing": missing,
    }


def report_rows(compared: Comparison, agreed: dict[str, Any]) -> list[Check]:
    """The report table: throughput and wall time, then how far the results agree."""
    missing, max_diff = agreed["missing"], agreed["max_abs_diff"]
    level_diff, reason_diff = agreed["level_differences"], agreed["reason_differences"]
    return [
        compared.throughput_check("traces", TARGET_RATIO),
        compared.wall_time_check(),
        Check("traces missing on one side", f"{missing:,}", "", "", "0", missing == 0),
        Check("max |aggregate diff|", f"{max_diff:.3g}", "", "", "<= 1e-12", max_diff <= 1e-12),
        Check("traces with another level", f"{level_diff:,}", "", "", "0", level_diff == 0),
        Check("traces with another reason", f"{reason_diff:,}", "", "", "0", reason_diff == 0),
    ]


def main() -> None:
    args = bench_args(__doc__.splitlines()[0], n_default=1_000_000, unit="traces")

    info, load = begin("bench_confidence: derived confidence, vectorized vs per-row", args)
    compared, split = against_rows(
        args, vectorized, LEAF_COLUMNS, baseline, "per-row confidence loop"
    )
    ours, base, n = compared.ours, compared.base, compared.n
    agreed = agreement(ours.result, base.result, n)
    levels = ours.result["level"].value_counts().sort("level")
    print_table(report_rows(compared, agreed))
    print("level distribution: " + ", ".join(f"{lvl} {cnt:,}" for lvl, cnt in levels.iter_rows()))
    parts = breakdown(synthetic_parquet(args.n, args.seed))
    print("where the vectorized time goes (each part materialized alone, best of 3):")
    for name, seconds in parts.items():
        print(f"  {name:40s} {seconds:7.3f} s")
    print()

    end(info, load)
    save_result(
        "bench_confidence",
        {
            "machine": info,
            **compared.figures(),
            "baseline_split": split,
            **agreed,
            "levels": dict(levels.iter_rows()),
            "breakdown": parts,
        },
    )


if __name__ == "__main__":
    main()
