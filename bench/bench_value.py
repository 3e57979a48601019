"""Value score throughput: vectorized Polars columns against a per-row Python port.

Both sides read the same Parquet file (only the leaf columns the score needs:
steps.type, steps.tool.name, metadata.task_domain, metadata.success, outcome.confidence)
and score every trace with novelty 0.5, the built-in profiles and share threshold 0.75.

    tracegrade: pyarrow read -> Polars projection of steps to struct{type, tool_name}
                -> transforms.value.value_features -> value_score -> collect
    baseline:   pyarrow read -> to_pylist -> transforms.sdk_value.reference_value per row

Run: .venv/bin/python bench/bench_value.py [--n 1000000]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
from _common import (
    Check,
    against_rows,
    begin,
    bench_args,
    end,
    fmt_rate,
    lazy_frame,
    print_table,
    read_breakdown,
    read_leaves,
    save_result,
    synthetic_parquet,
    timed,
)

from transforms.config.scoring import BUILTIN_PROFILES
from transforms.sdk_value import reference_value
from transforms.value import value_features, value_score

NOVELTY = 0.5
SHARE_THRESHOLD = 0.75
TARGET_RATIO = 20.0
TARGET_RATE = 500_000.0

LEAF_COLUMNS = [
    "steps.list.element.type",
    "steps.list.element.tool.name",
    "metadata.task_domain",
    "metadata.success",
    "outcome.confidence",
]
"""Parquet leaf paths the value score needs; nothing else is decoded."""


def score_inputs(table: pa.Table) -> pl.LazyFrame:
    """The frame value_features wants: steps as list<struct{type, tool_name}> and three scalars."""
    step = pl.element().struct
    return lazy_frame(table).select(
        steps=pl.col("steps").list.eval(
            pl.struct(type=step.field("type"), tool_name=step.field("tool").struct.field("name"))
        ),
        task_domain=pl.col("metadata").struct.field("task_domain"),
        success=pl.col("metadata").struct.field("success"),
        confidence=pl.col("outcome").struct.field("confidence"),
    )


def vectorized(path: Path) -> pl.DataFrame:
    """Read, project, score; the collected frame."""
    features = value_features(score_inputs(read_leaves(path, LEAF_COLUMNS)), BUILTIN_PROFILES)
    return value_score(features.with_columns(novelty=pl.lit(NOVELTY)), SHARE_THRESHOLD).collect()


def baseline(rows: list[dict[str, Any]]) -> list[float]:
    """The reference port one Python row at a time."""
    scores = []
    for row in rows:
        steps = [
            {"type": step["type"], "tool_name": step["tool"]["name"] if step["tool"] else None}
            for step in row["steps"]
        ]
        meta = row["metadata"]
        scores.append(
            reference_value(
                steps, meta["task_domain"], meta["success"], row["outcome"]["confidence"], NOVELTY
            )
        )
    return scores


def breakdown(path: Path) -> dict[str, float]:
    """Where the vectorized time goes: each part materialized on its own, best of 3."""
    parts, inputs = read_breakdown(path, LEAF_COLUMNS, score_inputs)
    parts["value_features"] = timed(
        lambda: value_features(inputs.lazy(), BUILTIN_PROFILES).collect()
    ).seconds
    features = (
        value_features(inputs.lazy(), BUILTIN_PROFILES)
        .with_columns(novelty=pl.lit(NOVELTY))
        .collect()
    )
    parts["value_score without `overrides` list"] = timed(
        lambda: value_score(features.lazy(), SHARE_THRESHOLD).drop("overrides").collect()
    ).seconds
    parts["value_score, all columns"] = timed(
        lambda: value_score(features.lazy(), SHARE_THRESHOLD).collect()
    ).seconds
    return parts


def main() -> None:
    args = bench_args(__doc__.splitlines()[0], n_default=1_000_000, unit="traces")

    info, load = begin("bench_value: value score, vectorized vs per-row reference", args)
    compared, split = against_rows(args, vectorized, LEAF_COLUMNS, baseline, "reference_value loop")
    ours, base, n = compared.ours, compared.base, compared.n

    vector_scores = ours.result["score"].to_numpy()
    reference_scores = np.asarray(base.result, dtype=np.float64)
    diff = np.abs(vector_scores - reference_scores)
    max_diff = float(diff.max()) if n else 0.0
    differing = int((diff != 0).sum())

    print_table(
        [
            compared.throughput_check("traces", TARGET_RATIO),
            Check(
                "vectorized throughput (traces/s)",
                fmt_rate(compared.ours_rate),
                "",
                "",
                f">= {fmt_rate(TARGET_RATE)}",
                compared.ours_rate >= TARGET_RATE,
            ),
            compared.wall_time_check(),
            Check(
                "max |score diff|", f"{max_diff:.3g}", "", "", "0.0 (identical)", max_diff == 0.0
            ),
            Check("rows with any difference", f"{differing:,}", "", "", "0", differing == 0),
        ]
    )

    parts = breakdown(synthetic_parquet(args.n, args.seed))
    print(
        "where the vectorized time goes (each part materialized alone, best of 3; parts "
        "overlap when fused in one query):"
    )
    for name, seconds in parts.items():
        print(f"  {name:40s} {seconds:7.3f} s")
    print()

    end(info, load)
    save_result(
        "bench_value",
        {
            "machine": info,
            **compared.figures(),
            "baseline_split": split,
            "max_abs_diff": max_diff,
            "rows_differing": differing,
            "breakdown": parts,
        },
    )


if __name__ == "__main__":
    main()
