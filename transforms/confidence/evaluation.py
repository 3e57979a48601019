"""How well derived (or factors) confidence separates good outcomes from failures.

Input: one row per trace with its confidence (`aggregate`), `level` and a 0/1 `label`
(1 = the outcome was good, 0 = it failed). ROC AUC is the probability that a good trace has a
higher confidence than a failed one (ties count half), from ranks; its interval is a
percentile bootstrap over traces with a fixed seed, so the same input prints the same text.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import polars as pl

from transforms.confidence.model import InterventionLevel

__all__ = ["Evaluation", "bootstrap_interval", "evaluate_levels", "roc_auc"]


def roc_auc(scores: npt.ArrayLike, labels: npt.ArrayLike) -> float:
    """ROC AUC of `scores` for labels 1 against 0 (Mann-Whitney, average ranks); NaN when one
    class is missing."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    good, bad = int((y == 1).sum()), int((y == 0).sum())
    if good == 0 or bad == 0:
        return float("nan")
    ranks = pl.Series(s).rank("average").to_numpy()
    return float((ranks[y == 1].sum() - good * (good + 1) / 2) / (good * bad))


def bootstrap_interval(
    scores: npt.ArrayLike, labels: npt.ArrayLike, *, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """The 2.5 and 97.5 percentiles of roc_auc over `resamples` resamples of the traces."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    rng = np.random.default_rng(seed)
    values = [roc_auc(s[i], y[i]) for i in rng.integers(0, len(s), size=(resamples, len(s)))]
    finite = np.array([v for v in values if not np.isnan(v)])
    if not len(finite):
        return float("nan"), float("nan")
    low, high = np.percentile(finite, [2.5, 97.5])
    return float(low), float(high)


@dataclass(frozen=True)
class Evaluation:
    """The figures and their Markdown."""

    traces: int
    auc: float
    interval: tuple[float, float]
    levels: pl.DataFrame
    failure_rate_rises: bool
    markdown: str


def _per_level(frame: pl.DataFrame) -> pl.DataFrame:
    order = [level.value for level in InterventionLevel]
    counts = frame.group_by("level").agg(
        traces=pl.len(), good=pl.col("label").sum(), failed=(1 - pl.col("label")).sum()
    )
    return (
        pl.DataFrame({"level": order})
        .join(counts, on="level", how="left", maintain_order="left")
        .with_columns(pl.col("traces", "good", "failed").fill_null(0).cast(pl.Int64))
        .with_columns(
            failure_rate=pl.when(pl.col("traces") > 0).then(pl.col("failed") / pl.col("traces"))
        )
    )


def evaluate_levels(frame: pl.DataFrame, *, unlabelled: int = 0, seed: int = 0) -> Evaluation:
    """Figures for rows (trace_id, aggregate, level, label); `unlabelled` traces had a level
    but no label and are left out (the text says how many)."""
    scores, labels = frame["aggregate"].to_numpy(), frame["label"].to_numpy()
    auc = roc_auc(scores, labels)
    interval = bootstrap_interval(scores, labels, seed=seed)
    levels = _per_level(frame)
    rates = levels.filter(pl.col("traces") > 0)["failure_rate"].to_list()
    rises = all(a < b for a, b in zip(rates, rates[1:], strict=False))
    lines = [
        "# Confidence against outcomes",
        "",
        "| count | value |",
        "|---|---|",
        f"| traces with a level and a label | {frame.height:,} |",
        f"| of them good (label 1) | {int(labels.sum()):,} |",
        f"| of them failed (label 0) | {frame.height - int(labels.sum()):,} |",
        f"| traces with a level but no label (left out) | {unlabelled:,} |",
        "",
        f"ROC AUC of the confidence (good above failed): {auc:.3f}, "
        f"95% bootstrap interval {interval[0]:.3f} to {interval[1]:.3f}",
        "",
        "| level | traces | good | failed | failure rate |",
        "|---|---|---|---|---|",
    ]
    for level, traces, good, failed, rate in levels.iter_rows():
        shown = f"{rate:.1%}" if rate is not None else "n/a"
        lines.append(f"| {level} | {traces:,} | {good:,} | {failed:,} | {shown} |")
    verdict = "rises" if rises else "does not rise"
    lines += ["", f"The failure rate {verdict} with each less calm level that holds traces."]
    return Evaluation(frame.height, auc, interval, levels, rises, "\n".join(lines) + "\n")
