"""How well derived (or factors) confidence separates good outcomes from failures.

Input: outcome cells, one row per distinct (confidence, level) with how many of its traces
were `good` (label 1) and how many `failed` (label 0); `outcome_cells` makes them from one row
per trace, and the store counts them in SQL, so a database of any size gives a small frame.
ROC AUC is the probability that a good trace has a higher confidence than a failed one (ties
count half); its 95% interval is DeLong's (the variance of the two-sample U statistic from
its structural components, midranks for ties), which the cells give exactly and with no
random draw, so the same input prints the same text at any size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import polars as pl

from transforms.confidence.model import InterventionLevel

__all__ = ["Evaluation", "OUTCOME_CELLS", "evaluate_levels", "outcome_cells", "roc_auc"]

OUTCOME_CELLS = {"aggregate": pl.Float64, "level": pl.String, "good": pl.Int64, "failed": pl.Int64}
"""The columns of outcome cells."""

_Z95 = 1.959963984540054
"""The standard normal quantile of 0.975."""


def outcome_cells(frame: pl.DataFrame) -> pl.DataFrame:
    """Outcome cells from one row per trace (aggregate, level, label 0/1)."""
    return (
        frame.group_by("aggregate", "level")
        .agg(good=pl.col("label").sum(), failed=(1 - pl.col("label")).sum())
        .select(pl.col(name).cast(dtype) for name, dtype in OUTCOME_CELLS.items())
        .sort("aggregate", "level")
    )


def _by_score(
    cells: pl.DataFrame,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Good and failed counts per distinct confidence, ascending."""
    merged = cells.group_by("aggregate").agg(pl.col("good", "failed").sum()).sort("aggregate")
    return (
        merged["good"].cast(pl.Float64).to_numpy(),
        merged["failed"].cast(pl.Float64).to_numpy(),
    )


def _auc_and_interval(cells: pl.DataFrame) -> tuple[float, tuple[float, float]]:
    """ROC AUC (good above failed, ties half) and DeLong's 95% interval, clipped to [0, 1];
    NaN without both outcomes, and an interval of NaN with fewer than two of either."""
    good, failed = _by_score(cells)
    g, f = good.sum(), failed.sum()
    if g == 0 or f == 0:
        return math.nan, (math.nan, math.nan)
    failed_below = np.cumsum(failed) - failed
    good_above = g - np.cumsum(good)
    # The numerators are sums of integers and halves below 2**53: exact, so the AUC is the
    # same double as the rank formula gives.
    auc = float((good * (failed_below + failed / 2)).sum() / (g * f))
    if g < 2 or f < 2:
        return auc, (math.nan, math.nan)
    placement_good = (failed_below + failed / 2) / f
    placement_failed = (good_above + good / 2) / g
    s10 = float((good * (placement_good - auc) ** 2).sum() / (g - 1))
    s01 = float((failed * (placement_failed - auc) ** 2).sum() / (f - 1))
    half = _Z95 * math.sqrt(s10 / g + s01 / f)
    return auc, (max(0.0, auc - half), min(1.0, auc + half))


def roc_auc(scores: npt.ArrayLike, labels: npt.ArrayLike) -> float:
    """ROC AUC of `scores` for labels 1 against 0 (ties count half); NaN when one class is
    missing."""
    frame = pl.DataFrame(
        {
            "aggregate": np.asarray(scores, dtype=np.float64),
            "level": pl.repeat("", len(np.asarray(scores)), eager=True),
            "label": np.asarray(labels, dtype=np.int64),
        }
    )
    return _auc_and_interval(outcome_cells(frame))[0]


@dataclass(frozen=True)
class Evaluation:
    """The figures and their Markdown."""

    traces: int
    good: int
    auc: float
    interval: tuple[float, float]
    levels: pl.DataFrame
    failure_rate_rises: bool
    markdown: str


def _per_level(cells: pl.DataFrame) -> pl.DataFrame:
    order = [level.value for level in InterventionLevel]
    counts = cells.group_by("level").agg(pl.col("good", "failed").sum())
    return (
        pl.DataFrame({"level": order})
        .join(counts, on="level", how="left", maintain_order="left")
        .with_columns(pl.col("good", "failed").fill_null(0).cast(pl.Int64))
        .select(
            "level",
            traces=pl.col("good") + pl.col("failed"),
            good="good",
            failed="failed",
        )
        .with_columns(
            failure_rate=pl.when(pl.col("traces") > 0).then(pl.col("failed") / pl.col("traces"))
        )
    )


def _figure(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.3f}"


def evaluate_levels(cells: pl.DataFrame, *, unlabelled: int = 0) -> Evaluation:
    """Figures for outcome cells (aggregate, level, good, failed); `unlabelled` traces had a
    level but no label and are left out (the text says how many)."""
    auc, interval = _auc_and_interval(cells)
    levels = _per_level(cells)
    traces, good = int(levels["traces"].sum()), int(levels["good"].sum())
    rates = levels.filter(pl.col("traces") > 0)["failure_rate"].to_list()
    rises = all(a < b for a, b in zip(rates, rates[1:], strict=False))
    lines = [
        "# Confidence against outcomes",
        "",
        "| count | value |",
        "|---|---|",
        f"| traces with a level and a label | {traces:,} |",
        f"| of them good (label 1) | {good:,} |",
        f"| of them failed (label 0) | {traces - good:,} |",
        f"| traces with a level but no label (left out) | {unlabelled:,} |",
        "",
        f"ROC AUC of the confidence (good above failed): {_figure(auc)}, "
        f"95% interval (DeLong) {_figure(interval[0])} to {_figure(interval[1])}",
        "",
        "| level | traces | good | failed | failure rate |",
        "|---|---|---|---|---|",
    ]
    for level, count, good_here, failed, rate in levels.iter_rows():
        shown = f"{rate:.1%}" if rate is not None else "n/a"
        lines.append(f"| {level} | {count:,} | {good_here:,} | {failed:,} | {shown} |")
    verdict = "rises" if rises else "does not rise"
    lines += ["", f"The failure rate {verdict} with each less calm level that holds traces."]
    return Evaluation(traces, good, auc, interval, levels, rises, "\n".join(lines) + "\n")
