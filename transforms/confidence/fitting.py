"""Level thresholds fitted from labels (`tracegrade confidence --fit`): the silent, notify and
confirm cuts of the stored confidence that best separate the labelled outcomes, with every
level holding a share of the traces and the failure rate never falling from a calmer level to
a less calm one; measured by k-fold cross-validation beside the GRACE defaults.

What is fitted: the AUC of the *level* (a trace's level against its label: a good trace
calmer than a failed one, ties half). The confidence's own AUC does not move with the cuts;
the levels' does, and it is what a team acts on. Candidate cuts are the confidence's
quantiles in steps of 2.5%; every triple of them is tried, each in O(1) from cumulative
counts, so the search costs the same at any size.

The cross-validation never lets a fold's labels choose its cuts: the traces are shuffled with
the stated seed and cut into k folds; each fold's levels come from cuts fitted on the other
k - 1; the figures are those of the pooled out-of-fold levels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from transforms.confidence.level_agreement import (
    Floats,
    Ints,
    OutcomeCell,
    OutcomeCells,
    as_columns,
)

__all__ = [
    "DEFAULT_CUTS",
    "MIN_LEVEL_SHARE",
    "Fit",
    "LevelFigures",
    "cross_validate",
    "fit_cuts",
    "level_figures",
    "labelled_traces",
    "levels_of",
]

DEFAULT_CUTS = (0.9, 0.7, 0.4)
"""GRACE's silent, notify and confirm thresholds (grace/config.py)."""

MIN_LEVEL_SHARE = 0.05
"""Least share of the traces each of the four levels must hold under fitted cuts."""

_QUANTILES = np.arange(0.025, 1.0, 0.025)
_TOLERANCE = 1e-9
"""A score this close below a cut reaches it (the levels' own LEVEL_TOLERANCE is smaller)."""


def labelled_traces(cells: OutcomeCells | Sequence[OutcomeCell]) -> tuple[Floats, Ints]:
    """(confidence, label) per labelled trace from outcome cells (1 good, 0 failed), in the
    cells' order, each cell's good traces before its failed ones."""
    columns = as_columns(cells)
    scores = np.repeat(columns.aggregate, columns.good + columns.failed)
    counts = np.stack([columns.good, columns.failed], axis=1).ravel()
    labels = np.repeat(np.tile(np.array([1, 0], dtype=np.int64), len(columns)), counts)
    return scores.astype(np.float64), labels.astype(np.int64)


def levels_of(scores: Floats, cuts: tuple[float, float, float]) -> Ints:
    """Each score's level, 0 SILENT (score >= silent) to 3 ESCALATE (below confirm)."""
    silent, notify, confirm = cuts
    levels = np.full(len(scores), 3, dtype=np.int64)
    levels[scores >= confirm - _TOLERANCE] = 2
    levels[scores >= notify - _TOLERANCE] = 1
    levels[scores >= silent - _TOLERANCE] = 0
    return levels


def _auc_of_bins(good: Floats, failed: Floats) -> float:
    """AUC of calmness (bin 0 calmest) for good above failed, ties half; NaN without both."""
    total_good, total_failed = good.sum(), failed.sum()
    if total_good == 0 or total_failed == 0:
        return math.nan
    less_calm_failed = failed[::-1].cumsum()[::-1] - failed  # failed in later bins
    return float((good * (less_calm_failed + failed / 2)).sum() / (total_good * total_failed))


@dataclass(frozen=True)
class LevelFigures:
    """Levels against labels: the level AUC and, per level, traces and failure rate."""

    auc: float
    traces: tuple[int, int, int, int]
    failure_rates: tuple[float | None, ...]

    @property
    def rates_rise(self) -> bool:
        """The failure rate never falls from a calmer level to a less calm one that holds
        traces."""
        held = [rate for rate in self.failure_rates if rate is not None]
        return all(a <= b for a, b in zip(held, held[1:], strict=False))


def level_figures(levels: Ints, labels: Ints) -> LevelFigures:
    """The figures of levels (0..3) against labels (1 good, 0 failed)."""
    good = np.bincount(levels[labels == 1], minlength=4).astype(np.float64)
    failed = np.bincount(levels[labels == 0], minlength=4).astype(np.float64)
    traces = good + failed
    rates = tuple(float(failed[b] / traces[b]) if traces[b] else None for b in range(4))
    counts = tuple(int(t) for t in traces)
    return LevelFigures(_auc_of_bins(good, failed), counts, rates)  # type: ignore[arg-type]


def fit_cuts(
    scores: Floats, labels: Ints, min_share: float = MIN_LEVEL_SHARE
) -> tuple[float, float, float]:
    """The (silent, notify, confirm) cuts among the scores' quantiles whose levels have the
    highest AUC, each level holding at least `min_share` of the traces and the failure rate
    never falling with a less calm level; the defaults where no triple qualifies."""
    candidates = np.unique(np.quantile(scores, _QUANTILES))[::-1]  # descending
    if len(candidates) < 3:
        return DEFAULT_CUTS
    # at or above each candidate: cumulative good and failed counts
    order = np.argsort(-scores, kind="stable")
    ranked, marks = scores[order], labels[order]
    above = np.searchsorted(-ranked, -candidates + _TOLERANCE, side="right")
    good_above = np.r_[0, np.cumsum(marks == 1)][above].astype(np.float64)
    failed_above = np.r_[0, np.cumsum(marks == 0)][above].astype(np.float64)
    n, total_good, total_failed = (
        len(scores),
        float((labels == 1).sum()),
        float((labels == 0).sum()),
    )
    least = min_share * n
    best, best_auc = DEFAULT_CUTS, -1.0
    count = len(candidates)
    for i in range(count):
        for j in range(i + 1, count):
            for k in range(j + 1, count):
                good = np.diff(np.r_[0.0, good_above[[i, j, k]], total_good])
                failed = np.diff(np.r_[0.0, failed_above[[i, j, k]], total_failed])
                traces = good + failed
                if traces.min() < least:
                    continue
                rates = failed / traces
                if np.any(np.diff(rates) < 0):
                    continue
                auc = _auc_of_bins(good, failed)
                if auc > best_auc:
                    best_auc = auc
                    best = (float(candidates[i]), float(candidates[j]), float(candidates[k]))
    return best


@dataclass(frozen=True)
class Fit:
    """Cuts fitted on every labelled trace, and the cross-validated figures beside the
    defaults' on the same traces."""

    cuts: tuple[float, float, float]
    folds: int
    seed: int
    fitted: LevelFigures
    """Pooled out-of-fold levels under cuts fitted without their fold."""
    defaults: LevelFigures
    """The same traces under the GRACE defaults."""
    fold_cuts: list[tuple[float, float, float]]


def cross_validate(scores: Floats, labels: Ints, folds: int = 5, seed: int = 0) -> Fit:
    """Fit on all traces; measure with `folds`-fold cross-validation (shuffled by `seed`)."""
    rng = np.random.default_rng(seed)
    fold_of = np.empty(len(scores), dtype=np.int64)
    fold_of[rng.permutation(len(scores))] = np.arange(len(scores)) % folds
    out_of_fold = np.empty(len(scores), dtype=np.int64)
    fold_cuts = []
    for fold in range(folds):
        held = fold_of == fold
        cuts = fit_cuts(scores[~held], labels[~held])
        fold_cuts.append(cuts)
        out_of_fold[held] = levels_of(scores[held], cuts)
    return Fit(
        fit_cuts(scores, labels),
        folds,
        seed,
        level_figures(out_of_fold, labels),
        level_figures(levels_of(scores, DEFAULT_CUTS), labels),
        fold_cuts,
    )
