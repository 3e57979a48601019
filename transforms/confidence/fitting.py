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

As an option (`--fit-weights`) the factor weights of the weighted mean are fitted first: a
coordinate search over WEIGHT_CANDIDATES, one weight at a time from the configured ones, that
keeps a change only when it raises the AUC of the confidence itself on the fitting traces.
What a candidate's confidences are is the caller's (`transforms.confidence.reweighted`
scores the labelled traces again); here they are numbers. Cross-validated the same way: each
fold's weights and then its cuts are fitted on the other folds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

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
    "WEIGHT_CANDIDATES",
    "Fit",
    "LevelFigures",
    "WeightFit",
    "confidence_auc",
    "cross_validate",
    "cross_validate_weights",
    "fit_cuts",
    "fit_weights",
    "fold_assignment",
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


def fold_assignment(count: int, folds: int, seed: int) -> Ints:
    """Each trace's fold: the traces shuffled by `seed`, dealt round the `folds` folds."""
    rng = np.random.default_rng(seed)
    fold_of = np.empty(count, dtype=np.int64)
    fold_of[rng.permutation(count)] = np.arange(count) % folds
    return fold_of


def cross_validate(scores: Floats, labels: Ints, folds: int = 5, seed: int = 0) -> Fit:
    """Fit on all traces; measure with `folds`-fold cross-validation (shuffled by `seed`)."""
    fold_of = fold_assignment(len(scores), folds, seed)
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


Weights = Mapping[str, float]
"""Factor weights by name (the keys of `[confidence.weights]`)."""

Scorer = Callable[[Weights], Floats]
"""The confidence of every labelled trace (in the labels' order) under the given weights."""

WEIGHT_CANDIDATES = (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.6, 0.8, 1.0, 1.5)
"""Values each factor weight may take in the search (tool success never 0: it is the one
factor every step counts, so the weighted mean needs it)."""

_ALWAYS_COUNTED = "tool_success"

_AUC_GAIN = 1e-9
"""The least rise of the AUC that moves a weight (a tie keeps the weight where it is)."""


def confidence_auc(scores: Floats, labels: Ints) -> float:
    """ROC AUC of `scores` for good (1) above failed (0), ties half; NaN without both: the
    levels' AUC (`_auc_of_bins`) with each distinct score a bin, the highest the calmest."""
    values, codes = np.unique(-scores, return_inverse=True)
    good = np.bincount(codes[labels == 1], minlength=len(values)).astype(np.float64)
    failed = np.bincount(codes[labels == 0], minlength=len(values)).astype(np.float64)
    return _auc_of_bins(good, failed)


def fit_weights(
    score: Scorer,
    labels: Ints,
    start: Weights,
    within: npt.NDArray[np.bool_] | None = None,
    rounds: int = 2,
) -> dict[str, float]:
    """The weights, from `start`, whose confidence best separates the labels of the traces
    `within` (all when None): each weight in turn takes the candidate with the highest AUC,
    the others held; a change is kept only when it raises the AUC, so where the labels do
    not tell, the configured weight stays. At most `rounds` passes over the weights: the
    search stops after a pass that changes none."""
    within = np.ones(len(labels), dtype=bool) if within is None else within
    marks = labels[within]

    def auc(weights: Weights) -> float:
        return confidence_auc(score(weights)[within], marks)

    best = dict(start)
    best_auc = auc(best)
    for _ in range(rounds):
        moved = False
        for name in best:
            for value in WEIGHT_CANDIDATES:
                if value == best[name] or (value == 0 and name == _ALWAYS_COUNTED):
                    continue
                trial = {**best, name: value}
                trial_auc = auc(trial)
                if trial_auc > best_auc + _AUC_GAIN:
                    best, best_auc, moved = trial, trial_auc, True
        if not moved:
            break
    return best


@dataclass(frozen=True)
class WeightFit:
    """Weights and cuts fitted on every labelled trace, and the cross-validated figures
    beside those of the configured weights under the GRACE default cuts."""

    weights: dict[str, float]
    cuts: tuple[float, float, float]
    folds: int
    seed: int
    fitted: LevelFigures
    """Pooled out-of-fold levels: each fold under weights and cuts fitted without it."""
    defaults: LevelFigures
    """The same traces under the configured weights and the GRACE default cuts."""
    fitted_confidence_auc: float
    """The confidence's AUC on each fold under weights fitted without it, averaged over the
    folds (a fold with one outcome only is left out)."""
    configured_confidence_auc: float
    """The same folds' AUC under the configured weights, averaged alike."""
    fold_weights: list[dict[str, float]]
    fold_cuts: list[tuple[float, float, float]]


def cross_validate_weights(
    score: Scorer, labels: Ints, start: Weights, folds: int = 5, seed: int = 0
) -> WeightFit:
    """Fit weights, then cuts, on all traces; measure with `folds`-fold cross-validation
    (the traces, in the order of `labels`, shuffled by `seed`). The confidence's AUC is
    compared fold by fold: a fold's confidences under its own weights against the same
    fold's under the configured ones (pooled over folds, scores made under different
    weights would not compare)."""
    fold_of = fold_assignment(len(labels), folds, seed)
    out_of_fold = np.empty(len(labels), dtype=np.int64)
    configured = score(start)
    fold_weights, fold_cuts, fitted_aucs, configured_aucs = [], [], [], []
    for fold in range(folds):
        held = fold_of == fold
        weights = fit_weights(score, labels, start, within=~held)
        scores = score(weights)
        cuts = fit_cuts(scores[~held], labels[~held])
        fold_weights.append(weights)
        fold_cuts.append(cuts)
        out_of_fold[held] = levels_of(scores[held], cuts)
        fitted_aucs.append(confidence_auc(scores[held], labels[held]))
        configured_aucs.append(confidence_auc(configured[held], labels[held]))
    weights = fit_weights(score, labels, start)
    return WeightFit(
        weights,
        fit_cuts(score(weights), labels),
        folds,
        seed,
        level_figures(out_of_fold, labels),
        level_figures(levels_of(configured, DEFAULT_CUTS), labels),
        _mean(fitted_aucs),
        _mean(configured_aucs),
        fold_weights,
        fold_cuts,
    )


def _mean(values: list[float]) -> float:
    """The mean of the values that are numbers (NaN when none is)."""
    found = [value for value in values if not math.isnan(value)]
    return sum(found) / len(found) if found else math.nan
