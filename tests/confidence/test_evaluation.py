"""`tracegrade confidence --evaluate`: AUC, interval and failure rate per level."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from transforms.confidence.evaluation import bootstrap_interval, evaluate_levels, roc_auc


def brute_auc(scores: list[float], labels: list[int]) -> float:
    pairs = [
        (1.0 if g > b else 0.5 if g == b else 0.0)
        for (g, lg), (b, lb) in itertools.product(zip(scores, labels, strict=True), repeat=2)
        if lg == 1 and lb == 0
    ]
    return sum(pairs) / len(pairs)


@pytest.mark.parametrize("seed", range(5))
def test_auc_equals_the_pairwise_count_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.choice([0.1, 0.4, 0.7, 0.9], size=40).tolist()
    labels = rng.integers(0, 2, size=40).tolist()
    assert roc_auc(scores, labels) == pytest.approx(brute_auc(scores, labels), abs=1e-12)
    low, high = bootstrap_interval(scores, labels, resamples=300)
    assert low <= roc_auc(scores, labels) <= high


def test_one_class_only_gives_nan() -> None:
    assert np.isnan(roc_auc([0.1, 0.2], [1, 1]))


def test_failure_rate_per_level_and_whether_it_rises() -> None:
    frame = pl.DataFrame(
        {
            "trace_id": list("abcdef"),
            "aggregate": [0.95, 0.8, 0.75, 0.5, 0.45, 0.1],
            "level": ["SILENT", "NOTIFY", "NOTIFY", "CONFIRM", "CONFIRM", "ESCALATE"],
            "label": [1, 1, 0, 0, 1, 0],
        }
    )
    result = evaluate_levels(frame, unlabelled=2)
    rates = dict(zip(result.levels["level"], result.levels["failure_rate"], strict=True))
    assert rates == {"SILENT": 0.0, "NOTIFY": 0.5, "CONFIRM": 0.5, "ESCALATE": 1.0}
    assert not result.failure_rate_rises
    assert "| NOTIFY | 2 | 1 | 1 | 50.0% |" in result.markdown
    assert "no label (left out) | 2 |" in result.markdown
    swapped = frame.with_columns(
        label=pl.Series([1, 1, 0, 0, 0, 0]),
        level=pl.Series(["SILENT", "NOTIFY", "NOTIFY"] + ["CONFIRM"] * 3),
    )
    assert evaluate_levels(swapped).failure_rate_rises
    assert evaluate_levels(swapped).auc == 1.0
