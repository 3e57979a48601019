"""`tracegrade confidence --evaluate` and the report: AUC, bootstrap and DeLong intervals and
failure rate per level, from outcome cells."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transforms.confidence.fitting import labelled_traces
from transforms.confidence.level_agreement import (
    OutcomeCell,
    OutcomeCells,
    evaluate_levels,
    outcome_cells,
    roc_auc,
)


def psi(good: float, failed: float) -> float:
    return 1.0 if good > failed else 0.5 if good == failed else 0.0


def brute_auc(scores: list[float], labels: list[int]) -> float:
    pairs = [
        psi(g, b)
        for (g, lg), (b, lb) in itertools.product(zip(scores, labels, strict=True), repeat=2)
        if lg == 1 and lb == 0
    ]
    return sum(pairs) / len(pairs)


def brute_delong(scores: list[float], labels: list[int]) -> tuple[float, float]:
    """DeLong's 95% interval trace by trace: each good trace's share of failed ones below it
    (ties half), each failed trace's share of good ones above it, their sample variances."""
    good = [s for s, y in zip(scores, labels, strict=True) if y == 1]
    failed = [s for s, y in zip(scores, labels, strict=True) if y == 0]
    v10 = [sum(psi(x, y) for y in failed) / len(failed) for x in good]
    v01 = [sum(psi(x, y) for x in good) / len(good) for y in failed]
    auc = sum(v10) / len(v10)
    s10 = sum((v - auc) ** 2 for v in v10) / (len(good) - 1)
    s01 = sum((v - auc) ** 2 for v in v01) / (len(failed) - 1)
    half = 1.959963984540054 * math.sqrt(s10 / len(good) + s01 / len(failed))
    return max(0.0, auc - half), min(1.0, auc + half)


def per_trace(scores: list[float], labels: list[int]) -> pl.DataFrame:
    levels = ["SILENT" if s >= 0.9 else "NOTIFY" if s >= 0.7 else "CONFIRM" for s in scores]
    return pl.DataFrame({"aggregate": scores, "level": levels, "label": labels})


@pytest.mark.parametrize("seed", range(5))
def test_auc_and_interval_equal_the_pairwise_counts_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.choice([0.1, 0.4, 0.7, 0.9], size=40).tolist()
    labels = rng.integers(0, 2, size=40).tolist()
    assert roc_auc(scores, labels) == pytest.approx(brute_auc(scores, labels), abs=1e-12)
    result = evaluate_levels(outcome_cells(per_trace(scores, labels)))
    assert result.auc == pytest.approx(brute_auc(scores, labels), abs=1e-12)
    assert result.interval == pytest.approx(brute_delong(scores, labels), abs=1e-12)
    assert result.interval[0] <= result.auc <= result.interval[1]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), st.integers(0, 1)),
        min_size=4,
        max_size=30,
    )
)
def test_cells_give_the_rank_auc_to_the_last_bit(rows: list[tuple[float, int]]) -> None:
    """The AUC from cells is the same double as the average-rank formula gives."""
    scores = [s for s, _ in rows]
    labels = [y for _, y in rows]
    good, failed = labels.count(1), labels.count(0)
    if good == 0 or failed == 0:
        assert math.isnan(roc_auc(scores, labels))
        return
    ranks = pl.Series(scores).rank("average").to_numpy()
    by_rank = (ranks[np.array(labels) == 1].sum() - good * (good + 1) / 2) / (good * failed)
    assert roc_auc(scores, labels) == by_rank


def test_one_class_only_gives_nan_and_one_of_a_class_no_interval() -> None:
    assert np.isnan(roc_auc([0.1, 0.2], [1, 1]))
    result = evaluate_levels(outcome_cells(per_trace([0.1, 0.5, 0.8], [0, 0, 1])))
    assert result.auc == 1.0 and all(math.isnan(v) for v in result.interval)
    assert "(bootstrap, 2,000 resamples) n/a to n/a; (DeLong) n/a to n/a" in result.markdown
    assert result.bootstrap is not None and all(math.isnan(v) for v in result.bootstrap)


def test_failure_rate_per_level_and_whether_it_rises() -> None:
    frame = pl.DataFrame(
        {
            "aggregate": [0.95, 0.8, 0.75, 0.5, 0.45, 0.1],
            "level": ["SILENT", "NOTIFY", "NOTIFY", "CONFIRM", "CONFIRM", "ESCALATE"],
            "label": [1, 1, 0, 0, 1, 0],
        }
    )
    result = evaluate_levels(outcome_cells(frame), unlabelled=2)
    rates = {row.level: row.failure_rate for row in result.levels}
    assert rates == {"SILENT": 0.0, "NOTIFY": 0.5, "CONFIRM": 0.5, "ESCALATE": 1.0}
    assert not result.failure_rate_rises
    assert (result.traces, result.good) == (6, 3)
    assert "| NOTIFY | 2 | 1 | 1 | 50.0% |" in result.markdown
    assert "no label (left out) | 2 |" in result.markdown
    swapped = frame.with_columns(
        label=pl.Series([1, 1, 0, 0, 0, 0]),
        level=pl.Series(["SILENT", "NOTIFY", "NOTIFY"] + ["CONFIRM"] * 3),
    )
    assert evaluate_levels(outcome_cells(swapped)).failure_rate_rises
    assert evaluate_levels(outcome_cells(swapped)).auc == 1.0


def brute_bootstrap(
    scores: list[float], labels: list[int], resamples: int, seed: int
) -> tuple[float, float]:
    """The stratified percentile bootstrap trace by trace: draw as many good and as many
    failed traces as there are, with replacement, and take the 2.5th and 97.5th percentiles."""
    rng = np.random.default_rng(seed)
    good = np.array([s for s, y in zip(scores, labels, strict=True) if y == 1])
    failed = np.array([s for s, y in zip(scores, labels, strict=True) if y == 0])
    aucs = []
    for _ in range(resamples):
        g = rng.choice(good, size=len(good))
        f = rng.choice(failed, size=len(failed))
        aucs.append(brute_auc([*g, *f], [1] * len(g) + [0] * len(f)))
    low, high = np.percentile(aucs, [2.5, 97.5])
    return float(low), float(high)


@pytest.mark.parametrize("seed", range(3))
def test_bootstrap_interval_agrees_with_resampling_the_traces(seed: int) -> None:
    """The bootstrap over outcome cells is the bootstrap over traces: with the same number of
    resamples but other random draws, their intervals agree to sampling error, and both hold
    the AUC."""
    rng = np.random.default_rng(100 + seed)
    labels = rng.integers(0, 2, size=60).tolist()
    scores = [round(float(rng.normal(0.6 + 0.1 * y, 0.15)), 2) for y in labels]
    result = evaluate_levels(outcome_cells(per_trace(scores, labels)))
    assert result.bootstrap is not None
    low, high = result.bootstrap
    brute_low, brute_high = brute_bootstrap(scores, labels, resamples=2_000, seed=seed)
    assert low == pytest.approx(brute_low, abs=0.02)
    assert high == pytest.approx(brute_high, abs=0.02)
    assert low < result.auc < high
    assert f"(bootstrap, 2,000 resamples) {low:.3f} to {high:.3f}" in result.markdown


def test_bootstrap_is_the_same_text_each_time_and_left_out_over_its_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from transforms.confidence import level_agreement

    rng = np.random.default_rng(7)
    labels = rng.integers(0, 2, size=300).tolist()
    scores = rng.random(300).round(3).tolist()
    cells = outcome_cells(per_trace(scores, labels))
    assert evaluate_levels(cells).markdown == evaluate_levels(cells).markdown
    distinct = len({cell.aggregate for cell in cells})
    monkeypatch.setattr(level_agreement, "BOOTSTRAP_MAX_SCORES", distinct - 1)
    result = evaluate_levels(cells)
    assert result.bootstrap is None
    assert f"(bootstrap) left out, over {distinct - 1:,} distinct confidences" in result.markdown
    assert not math.isnan(result.interval[0])


def test_cells_as_columns_give_the_same_figures_and_back_the_same_cells() -> None:
    """The store hands cells over as NumPy columns (`OutcomeCells`: about a cell a trace when
    the confidence is continuous); the figures are those of the same cells as tuples, and a
    level name that is none of the four counts in no level either way."""
    cells = [
        OutcomeCell(0.1, "ESCALATE", 0, 2),
        OutcomeCell(0.45, "CONFIRM", 1, 1),
        OutcomeCell(0.45, "ODD", 3, 0),
        OutcomeCell(0.8, "NOTIFY", 2, 1),
        OutcomeCell(0.95, "SILENT", 4, 0),
    ]
    columns = OutcomeCells.of(cells)

    assert len(columns) == 5 and columns.level.tolist() == [3, 2, -1, 1, 0]
    assert list(columns) == [
        cell if cell.level != "ODD" else cell._replace(level="") for cell in cells
    ]
    assert evaluate_levels(columns) == evaluate_levels(cells)
    figures = evaluate_levels(columns)
    assert {row.level: row.traces for row in figures.levels} == {
        "SILENT": 4,
        "NOTIFY": 3,
        "CONFIRM": 2,
        "ESCALATE": 2,
    }
    scores, labels = labelled_traces(columns)
    assert scores.tolist() == [0.1, 0.1, 0.45, 0.45, 0.45, 0.45, 0.45, 0.8, 0.8, 0.8, *[0.95] * 4]
    assert labels.tolist() == [0, 0, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1]
    assert (scores.tolist(), labels.tolist()) == tuple(x.tolist() for x in labelled_traces(cells))
