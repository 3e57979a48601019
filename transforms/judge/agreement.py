"""How well the judge agrees with people: per metric and for the overall score, against labels
that people gave the same answers (`tracegrade judge --evaluate`).

Labels are whole numbers: two values (a binary verdict, 0 and 1 say, the higher good) or more
on an ordinal scale (1 to 5, say). Per metric, over the answers that have both a score and a label:

- Spearman's rho of the score and the label (Pearson's r of their midranks, so ties share a
  rank); n/a where either is constant.
- ROC AUC (binary labels only): the chance that a good answer scored above a bad one, ties
  half.
- Cohen's kappa at the metric's pass threshold: with binary labels, between "passed" (score >=
  threshold) and the label; with ordinal labels, the quadratic-weighted kappa between the label
  and the score put on the label's scale (the K values seen, lowest first, over K equal bins of
  0 to 100: with labels 1 to 5, a score of 0 to 20 is 1, 20 to 40 is 2, ..., 80 to 100 is 5).
- The confusion at the threshold: passed and failed answers by label value.

Each figure has a 95% percentile bootstrap interval: BOOTSTRAP_RESAMPLES draws of as many
answers, with replacement, from a fixed seed (the same input prints the same text), drawn as
counts of the distinct (score, label) pairs; above BOOTSTRAP_MAX_CELLS of them the intervals
are left out, and the text says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "DEFAULT_PASS_THRESHOLD",
    "Agreement",
    "agreement",
    "agreement_markdown",
    "agreements",
    "cohen_kappa",
    "figure_text",
    "ordinal_bins",
    "spearman_rho",
]

DEFAULT_PASS_THRESHOLD = 50.0
"""The score (0 to 100) at and above which an answer passes, where the judge configuration
sets none (`pass_threshold`): the middle of the scale. Only the agreement reads it."""

BOOTSTRAP_RESAMPLES = 2_000
BOOTSTRAP_MAX_CELLS = 200_000
"""Most distinct (score, label) pairs the intervals are drawn over: a resample costs time in
their number, not in the answers' (scores of 0 to 100 make at most a few hundred)."""

_SEED = 20_261_128

Floats = npt.NDArray[np.float64]


def _table(values: Floats, codes: npt.NDArray[np.int64], k: int) -> tuple[Floats, Floats]:
    """The distinct scores, ascending, and the answers counted by (score, label code): the
    form every figure is computed from, for the answers and for each resample of them."""
    distinct, where = np.unique(values, return_inverse=True)
    cells = np.bincount(where * k + codes, minlength=len(distinct) * k).astype(np.float64)
    return distinct, cells.reshape(len(distinct), k)


def _rhos(counts: Floats) -> Floats:
    """Spearman's rho (ties as midranks) of each table of counts along the first axis
    (samples x distinct scores x label codes); NaN where a side is constant."""
    n = counts.sum(axis=(1, 2))
    by_score, by_label = counts.sum(axis=2), counts.sum(axis=1)
    mean = (n + 1) / 2
    score_ranks = np.cumsum(by_score, axis=1) - by_score + (by_score + 1) / 2 - mean[:, None]
    label_ranks = np.cumsum(by_label, axis=1) - by_label + (by_label + 1) / 2 - mean[:, None]
    together = np.einsum("rsl,rs,rl->r", counts, score_ranks, label_ranks)
    spread = np.sqrt((by_score * score_ranks**2).sum(1) * (by_label * label_ranks**2).sum(1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(spread > 0, together / spread, np.nan)


def spearman_rho(scores: npt.ArrayLike, labels: npt.ArrayLike) -> float:
    """Spearman's rho (ties as midranks); NaN with fewer than two answers or a constant side."""
    marks, codes = np.unique(np.asarray(labels, dtype=np.float64), return_inverse=True)
    _, cells = _table(np.asarray(scores, dtype=np.float64), codes, max(1, len(marks)))
    return float(_rhos(cells[None])[0])


def _kappa_weights(k: int, weighted: bool) -> Floats:
    """Disagreement weights of a k x k table: quadratic, or 1 off the diagonal."""
    i, j = np.indices((k, k))
    return (i - j) ** 2 / max(1, (k - 1) ** 2) if weighted else (i != j).astype(np.float64)


def _kappas(observed: Floats, weights: Floats) -> Floats:
    """Cohen's kappa of each (k x k) table of counts along the first axis (NaN where chance
    agreement is already perfect, or the table is empty)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        share = observed / observed.sum(axis=(1, 2), keepdims=True)
        expected = share.sum(axis=2)[:, :, None] * share.sum(axis=1)[:, None, :]
        chance = (weights * expected).sum(axis=(1, 2))
        seen = (weights * share).sum(axis=(1, 2))
        return np.where(chance > 0, 1.0 - seen / chance, np.nan)


def cohen_kappa(rated: npt.ArrayLike, labels: npt.ArrayLike, k: int, weighted: bool) -> float:
    """Cohen's kappa of two ratings given as category indices 0..k-1; quadratic weights when
    `weighted`. NaN where chance agreement is already perfect (one category on both sides)."""
    a, b = np.asarray(rated, dtype=np.int64), np.asarray(labels, dtype=np.int64)
    observed = np.bincount(a * k + b, minlength=k * k).reshape(1, k, k).astype(np.float64)
    return float(_kappas(observed, _kappa_weights(k, weighted))[0])


def ordinal_bins(scores: npt.ArrayLike, k: int) -> npt.NDArray[np.int64]:
    """Scores 0..100 on a scale of k values: k equal bins, 100 in the top one."""
    values = np.asarray(scores, dtype=np.float64)
    return np.clip(np.floor(values / 100.0 * k), 0, k - 1).astype(np.int64)


@dataclass(frozen=True)
class Agreement:
    """One metric's (or the overall score's) agreement with the labels."""

    name: str
    threshold: float
    labelled: int
    scale: tuple[float, ...]
    """The label values seen, lowest first: two for binary labels."""
    rho: float
    auc: float | None
    """None for ordinal labels."""
    kappa: float
    weighted: bool
    confusion: dict[str, list[int]]
    """"passed" and "failed" -> answers per label value (in `scale` order)."""
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    """rho, auc, kappa -> 95% bootstrap interval; empty where the bootstrap was left out."""

    def as_json(self) -> dict[str, Any]:
        """The figures as JSON values (NaN as null)."""

        def number(value: float | None) -> float | None:
            return None if value is None or math.isnan(value) else value

        return {
            "name": self.name,
            "labelled": self.labelled,
            "threshold": self.threshold,
            "scale": list(self.scale),
            "spearman_rho": number(self.rho),
            "auc": number(self.auc),
            "kappa": number(self.kappa),
            "kappa_weights": "quadratic" if self.weighted else "none",
            "intervals": {
                key: [number(low), number(high)] for key, (low, high) in self.intervals.items()
            },
            "confusion": {
                "label_values": list(self.scale),
                "passed": self.confusion["passed"],
                "failed": self.confusion["failed"],
            },
        }


def _cell_figures(
    counts: Floats, values: Floats, binary: bool, threshold: float, k: int
) -> dict[str, Floats]:
    """rho, AUC (binary) and kappa of each sample given as counts (samples x distinct scores
    `values`, ascending, x label codes)."""
    figures = {"rho": _rhos(counts)}
    if binary:
        good, bad = counts[:, :, 1], counts[:, :, 0]
        below = np.cumsum(bad, axis=1) - bad / 2  # bad answers scored lower, ties half
        with np.errstate(divide="ignore", invalid="ignore"):
            figures["auc"] = (good * below).sum(1) / (good.sum(1) * bad.sum(1))
        rated = (values >= threshold).astype(np.int64)
    else:
        rated = ordinal_bins(values, k)
    observed = np.stack([counts[:, rated == b, :].sum(axis=1) for b in range(k)], axis=1)
    figures["kappa"] = _kappas(observed, _kappa_weights(k, not binary))
    return figures


def _interval(values: Floats) -> tuple[float, float]:
    finite = values[~np.isnan(values)]
    if len(finite) < len(values) / 2:  # most resamples have no figure (one class drawn)
        return math.nan, math.nan
    low, high = np.percentile(finite, [2.5, 97.5])
    return float(low), float(high)


def _bootstrap(
    distinct: Floats, cells: Floats, binary: bool, threshold: float, k: int
) -> dict[str, tuple[float, float]]:
    """95% percentile intervals of the figures over BOOTSTRAP_RESAMPLES resamples of the
    answers, drawn as multinomial counts of the distinct (score, label) cells: the cost is in
    the number of distinct scores, not of answers."""
    n = int(cells.sum())
    rng = np.random.default_rng(_SEED)
    chunk = max(1, 4_000_000 // cells.size)
    drawn: dict[str, list[Floats]] = {}
    for start in range(0, BOOTSTRAP_RESAMPLES, chunk):
        size = min(chunk, BOOTSTRAP_RESAMPLES - start)
        counts = rng.multinomial(n, cells.ravel() / n, size=size).astype(np.float64)
        found = _cell_figures(counts.reshape(size, *cells.shape), distinct, binary, threshold, k)
        for key, figure in found.items():
            drawn.setdefault(key, []).append(figure)
    return {key: _interval(np.concatenate(parts)) for key, parts in drawn.items()}


def agreement(
    name: str,
    scores: npt.ArrayLike,
    labels: npt.ArrayLike,
    threshold: float,
    scale: tuple[float, ...],
) -> Agreement:
    """The agreement of `scores` (0..100) with `labels` (values of `scale`, lowest first;
    binary when the scale has two values, the higher one good) at the pass `threshold`."""
    values = np.asarray(scores, dtype=np.float64)
    marks = np.asarray(labels, dtype=np.float64)
    binary = len(scale) == 2
    k = len(scale)
    codes = np.searchsorted(np.asarray(scale), marks).astype(np.int64)
    distinct, cells = _table(values, codes, k)
    counted = _cell_figures(cells[None], distinct, binary, threshold, k)
    figures = {key: float(figure[0]) for key, figure in counted.items()}
    passed = values >= threshold
    confusion = {
        "passed": np.bincount(codes[passed], minlength=k).tolist(),
        "failed": np.bincount(codes[~passed], minlength=k).tolist(),
    }
    intervals: dict[str, tuple[float, float]] = {}
    if len(values) >= 2 and cells.size <= BOOTSTRAP_MAX_CELLS:
        intervals = _bootstrap(distinct, cells, binary, threshold, k)
    return Agreement(
        name,
        threshold,
        len(values),
        scale,
        figures["rho"],
        figures.get("auc") if binary else None,
        figures["kappa"],
        not binary,
        confusion,
        intervals,
    )


def figure_text(value: float, interval: tuple[float, float] | None = None) -> str:
    """A figure to three decimals (never "-0.000") with its interval where it has one; "n/a"
    for NaN (a constant side, or chance agreement already perfect)."""
    if math.isnan(value):
        return "n/a"
    if interval is None or math.isnan(interval[0]):
        return _three(value)
    return f"{_three(value)} ({_three(interval[0])} to {_three(interval[1])})"


def _figure(value: float | None, interval: tuple[float, float] | None) -> str:
    return "- (labels not binary)" if value is None else figure_text(value, interval)


def _three(value: float) -> str:
    """Three decimals, never "-0.000"."""
    return f"{round(value, 3) + 0.0:.3f}"


def _value(value: float) -> str:
    return f"{value:g}"


def agreement_markdown(
    results: Sequence[Agreement], labels: str, unlabelled: int, left_out: str = ""
) -> str:
    """The agreement of every metric and the overall score as Markdown: the figures with
    their intervals, then the confusion at each pass threshold. `labels` says in words where
    the labels came from; `unlabelled` judged answers had none."""
    scale = results[0].scale if results else ()
    kind = "binary" if len(scale) == 2 else "ordinal"
    kappa = "kappa" if kind == "binary" else "weighted kappa (quadratic)"
    intervals = (
        f"95% intervals: percentile bootstrap, {BOOTSTRAP_RESAMPLES:,} resamples, fixed seed"
        if any(result.intervals for result in results)
        else f"no intervals: over {BOOTSTRAP_MAX_CELLS:,} distinct scores and labels, or fewer "
        "than two answers"
    )
    lines = [
        "# The judge against labels",
        "",
        f"Labels: {labels}; {kind}, values {', '.join(_value(v) for v in scale) or 'none'}.",
        f"Judged answers with a label: {max((r.labelled for r in results), default=0):,}; "
        f"judged answers without one (left out): {unlabelled:,}.{left_out}",
        "",
        f"| score | labelled | pass threshold | Spearman's rho | AUC | {kappa} |",
        "|---|---|---|---|---|---|",
    ]
    for result in results:
        got = result.intervals
        lines.append(
            f"| {result.name} | {result.labelled:,} | {_value(result.threshold)} | "
            f"{_figure(result.rho, got.get('rho'))} | {_figure(result.auc, got.get('auc'))} | "
            f"{_figure(result.kappa, got.get('kappa'))} |"
        )
    lines += [
        "",
        intervals + ".",
        "",
        "Confusion at the pass threshold (answers by label value):",
        "",
        "| score | judge | " + " | ".join(f"label {_value(v)}" for v in scale) + " |",
        "|---|---|" + "---|" * len(scale),
    ]
    for result in results:
        for verdict in ("passed", "failed"):
            counts = " | ".join(f"{count:,}" for count in result.confusion[verdict])
            lines.append(f"| {result.name} | {verdict} | {counts} |")
    return "\n".join(lines) + "\n"


def agreements(
    scores: Mapping[str, Sequence[float]],
    labels: Mapping[str, Sequence[float]],
    thresholds: Mapping[str, float],
    default: float,
    overall: str,
) -> list[Agreement]:
    """The agreement of every score name (a metric, or `overall`) with its answers' labels:
    the metrics of `thresholds` in its order, any other metric by name, then `overall`; each
    at its threshold, else `default`."""
    scale = tuple(sorted({value for values in labels.values() for value in values}))
    names = [name for name in thresholds if name in scores]
    names += sorted(set(scores) - set(names) - {overall})
    names += [overall] if overall in scores else []
    return [
        agreement(name, scores[name], labels[name], thresholds.get(name, default), scale)
        for name in names
    ]
