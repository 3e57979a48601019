"""A judge metric's pass threshold fitted to people's binary labels (`tracegrade judge --fit`):
the score at and above which an answer passes that agrees best with the labels (Cohen's
kappa), cross-validated so that no fold's labels choose its own threshold.

Candidates are the scores the metric gave (an answer passes at its own score), and 0 (all
pass); ties in kappa go to the threshold nearest the configured one. The cross-validation
shuffles the answers with the stated seed, cuts them into k folds, and passes or fails each
fold's answers at the threshold fitted on the other folds; the kappa printed is that of the
pooled out-of-fold verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from transforms.judge.agreement import cohen_kappa

__all__ = ["fitted_threshold"]


def _kappa(scores: npt.NDArray[np.float64], good: npt.NDArray[np.int64], cut: float) -> float:
    return cohen_kappa((scores >= cut).astype(np.int64), good, 2, False)


def fit_threshold(
    scores: npt.NDArray[np.float64], good: npt.NDArray[np.int64], near: float
) -> float:
    """The pass threshold with the highest kappa against `good` (1 good, 0 bad); `near` (the
    configured one) where no candidate has a kappa, and the tie-break."""
    best, best_kappa = near, -np.inf
    for cut in sorted(set(np.unique(scores).tolist()) | {0.0}, key=lambda c: abs(c - near)):
        kappa = _kappa(scores, good, cut)
        if not np.isnan(kappa) and kappa > best_kappa:
            best, best_kappa = float(cut), kappa
    return best


@dataclass(frozen=True)
class ThresholdFit:
    """One metric's fitted threshold and the kappas beside the configured one's."""

    name: str
    configured: float
    fitted: float
    configured_kappa: float
    cross_validated_kappa: float
    """The pooled out-of-fold verdicts' kappa (thresholds fitted without their fold)."""
    labelled: int


def fitted_threshold(
    name: str,
    scores: npt.ArrayLike,
    good: npt.ArrayLike,
    configured: float,
    folds: int,
    seed: int,
) -> ThresholdFit:
    """Fit `name`'s pass threshold on every answer; measure it with `folds`-fold
    cross-validation (shuffled by `seed`) beside the `configured` threshold's kappa."""
    values = np.asarray(scores, dtype=np.float64)
    marks = np.asarray(good, dtype=np.int64)
    fold_of = np.empty(len(values), dtype=np.int64)
    fold_of[np.random.default_rng(seed).permutation(len(values))] = np.arange(len(values)) % folds
    passed = np.zeros(len(values), dtype=np.int64)
    for fold in range(folds):
        held = fold_of == fold
        cut = fit_threshold(values[~held], marks[~held], configured)
        passed[held] = values[held] >= cut
    return ThresholdFit(
        name,
        configured,
        fit_threshold(values, marks, configured),
        _kappa(values, marks, configured),
        cohen_kappa(passed, marks, 2, False),
        len(values),
    )
