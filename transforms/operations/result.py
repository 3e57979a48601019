"""The operation result scorer: how much of the model's output applies, and how good the result is.

score = application success rate * 0.6 + content score * 0.4, where the success rate is the
share of actual operations that applied (see simulate) and the content score is the content
quality score of the edited document.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from transforms.operations._json import CASE, json_items, scored_cases
from transforms.operations.prepare import PreparedCases
from transforms.operations.simulate import Simulation

__all__ = ["operation_result"]

APPLICATION_WEIGHT = 0.6
CONTENT_WEIGHT = 0.4


def operation_result(
    prepared: PreparedCases, simulation: Simulation, content: pl.DataFrame
) -> pl.DataFrame:
    """case_idx, score and details (JSON); `content` is the content_quality frame.

    With no actual operations the success rate is 1 when none were expected either, else 0.
    """
    actual = simulation.actual
    cases = prepared.cases
    applied = np.bincount(
        actual[CASE].to_numpy(),
        weights=actual["applied"].to_numpy().astype(np.float64),
        minlength=cases.height,
    ).astype(np.int64)
    failed = actual.filter(~pl.col("applied"))
    item = pl.struct(
        index=pl.col("op_pos"),
        type=pl.col("type"),
        targetBlockId=pl.col("target_block_id"),
        targetIndex=pl.col("target_index"),
        position=pl.col("position"),
        reason=pl.col("failure"),
    )
    total = pl.col("n_actual")
    frame = (
        cases.select(CASE, "n_expected", "n_actual")
        .with_columns(
            _applied=pl.Series(applied),
            _failed=json_items(cases, failed, item),
            _content=content["score"],
        )
        .with_columns(
            _rate=pl.when(total > 0)
            .then(pl.col("_applied").cast(pl.Float64) / total.cast(pl.Float64))
            .when(pl.col("n_expected") == 0)
            .then(1.0)
            .otherwise(0.0)
        )
        # Two columns first: Polars would fuse `a * b + c` and round differently.
        .with_columns(
            _rate_term=pl.col("_rate") * APPLICATION_WEIGHT,
            _content_term=pl.col("_content") * CONTENT_WEIGHT,
        )
    )
    return scored_cases(
        frame,
        pl.col("_rate_term") + pl.col("_content_term"),
        {
            "applicationSuccessRate": pl.col("_rate"),
            "appliedOperations": pl.col("_applied"),
            "totalOperations": total,
            "contentScore": pl.col("_content"),
        },
        failedOperations=pl.col("_failed"),
    )
