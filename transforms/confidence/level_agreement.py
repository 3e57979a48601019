"""How well derived (or factors) confidence separates good outcomes from failures.

Input: outcome cells, one row per distinct (confidence, level) with how many of its traces
were `good` (label 1) and how many `failed` (label 0); `outcome_cells` makes them from one row
per trace, and the store counts them in SQL. With a confidence that takes few values a
database of any size gives a short list; with a continuous one (the answer's coverage makes it
so) there is about a cell a trace, so the store hands them over as NumPy columns
(`OutcomeCells`; 9,500,000 cells held as tuples took 3 GiB). The arithmetic is NumPy's:
`tracegrade confidence --evaluate` loads no data-frame library.
ROC AUC is the probability that a good trace has a higher confidence than a failed one (ties
count half). Two 95% intervals: DeLong's (the variance of the two-sample U statistic from its
structural components, midranks for ties), which the cells give exactly at any size, and a
stratified percentile bootstrap (BOOTSTRAP_RESAMPLES draws of as many good and as many failed
traces as there are, with replacement, from a fixed seed, so the same input prints the same
text). A resample costs time in the number of distinct confidences, so the bootstrap is left
out above BOOTSTRAP_MAX_SCORES of them (the text says so) and DeLong's stands alone; where
both were measured they agreed to the third decimal or nearly (tau-bench 0.656-0.801 and
0.653-0.802, the demo's 4,950 traces 0.910-0.926 and 0.909-0.927).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt

from transforms.confidence.model import InterventionLevel
from transforms.words import NONE

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "rate_verdict",
    "BOOTSTRAP_MAX_SCORES",
    "BOOTSTRAP_RESAMPLES",
    "Floats",
    "Ints",
    "LEVELS",
    "LevelRate",
    "OutcomeCell",
    "OutcomeCells",
    "as_columns",
    "evaluate_levels",
    "interval_text",
    "outcome_cells",
    "roc_auc",
]


class OutcomeCell(NamedTuple):
    """The labelled traces of one distinct (confidence, level)."""

    aggregate: float
    level: str
    good: int
    failed: int


LEVELS = tuple(level.value for level in InterventionLevel)
"""The levels, calmest first: `OutcomeCells.level` holds an index into it."""

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class OutcomeCells:
    """Outcome cells as columns, one row a distinct (confidence, level) in the order the cells
    sort (aggregate, then the level's name): `level` the index of the level in `LEVELS`, -1
    for a name that is none of them (counted in no level). Iterating gives `OutcomeCell`s."""

    aggregate: Floats
    level: Ints
    good: Ints
    failed: Ints

    @classmethod
    def of(cls, cells: Iterable[OutcomeCell]) -> OutcomeCells:
        """The columns of `cells` (in their order)."""
        rows = list(cells)
        codes = {name: index for index, name in enumerate(LEVELS)}
        return cls(
            np.array([cell.aggregate for cell in rows], dtype=np.float64),
            np.array([codes.get(cell.level, -1) for cell in rows], dtype=np.int64),
            np.array([cell.good for cell in rows], dtype=np.int64),
            np.array([cell.failed for cell in rows], dtype=np.int64),
        )

    def __len__(self) -> int:
        return len(self.aggregate)

    def __iter__(self) -> Iterator[OutcomeCell]:
        for aggregate, level, good, failed in zip(
            self.aggregate.tolist(),
            self.level.tolist(),
            self.good.tolist(),
            self.failed.tolist(),
            strict=True,
        ):
            yield OutcomeCell(aggregate, LEVELS[level] if level >= 0 else "", good, failed)


def as_columns(cells: OutcomeCells | Sequence[OutcomeCell]) -> OutcomeCells:
    """`cells` as columns (as they are when they already are)."""
    return cells if isinstance(cells, OutcomeCells) else OutcomeCells.of(cells)


class LevelRate(NamedTuple):
    """One level's labelled traces and failure rate (None when it holds none)."""

    level: str
    traces: int
    good: int
    failed: int
    failure_rate: float | None


_Z95 = 1.959963984540054
"""The standard normal quantile of 0.975."""

BOOTSTRAP_RESAMPLES = 2_000
"""Resamples of the bootstrap interval."""

BOOTSTRAP_MAX_SCORES = 10_000
"""Most distinct confidences the bootstrap is drawn over: 2,000 resamples of 10,000 take about
3 s on a 2-core AMD EPYC (Zen 2), of 100,000 about 20 s."""

_BOOTSTRAP_SEED = 20_261_126
_BOOTSTRAP_CELLS_PER_CHUNK = 4_000_000
"""Resamples are drawn in chunks of at most this many counts (8 bytes each, times four)."""


Counts = npt.NDArray[np.float64]
"""Good or failed traces per distinct confidence, ascending (a row per resample for the
bootstrap's draws)."""


def _cells(traces: Iterable[tuple[float, str, int]]) -> list[OutcomeCell]:
    """Outcome cells from (aggregate, level, label 0/1) per trace, sorted."""
    counts: dict[tuple[float, str], list[int]] = {}
    for aggregate, level, label in traces:
        cell = counts.setdefault((float(aggregate), level), [0, 0])
        cell[0 if label else 1] += 1
    return [
        OutcomeCell(a, level, good, failed) for (a, level), (good, failed) in sorted(counts.items())
    ]


def outcome_cells(frame: pl.DataFrame) -> list[OutcomeCell]:
    """Outcome cells from one row per trace (aggregate, level, label 0/1)."""
    return _cells(frame.select("aggregate", "level", "label").iter_rows())


def _by_score(cells: OutcomeCells) -> tuple[Counts, Counts]:
    """Good and failed counts per distinct confidence, ascending."""
    distinct, where = np.unique(cells.aggregate, return_inverse=True)
    size = len(distinct)
    good = np.bincount(where, cells.good, minlength=size)
    failed = np.bincount(where, cells.failed, minlength=size)
    return good.astype(np.float64), failed.astype(np.float64)


def _placement_of_good(failed: Counts) -> Counts:
    """For each confidence, the failed traces below it plus half of those tied with it (last
    axis)."""
    return np.cumsum(failed, axis=-1) - failed / 2


def _auc_and_interval(good: Counts, failed: Counts) -> tuple[float, tuple[float, float]]:
    """ROC AUC (good above failed, ties half) and DeLong's 95% interval, clipped to [0, 1];
    NaN without both outcomes, and an interval of NaN with fewer than two of either."""
    g, f = good.sum(), failed.sum()
    if g == 0 or f == 0:
        return math.nan, (math.nan, math.nan)
    below = _placement_of_good(failed)
    # The numerators are sums of integers and halves below 2**53: exact, so the AUC is the
    # same double as the rank formula gives.
    auc = float((good * below).sum() / (g * f))
    if g < 2 or f < 2:
        return auc, (math.nan, math.nan)
    placement_good = below / f
    placement_failed = (g - np.cumsum(good) + good / 2) / g
    s10 = float((good * (placement_good - auc) ** 2).sum() / (g - 1))
    s01 = float((failed * (placement_failed - auc) ** 2).sum() / (f - 1))
    half = _Z95 * math.sqrt(s10 / g + s01 / f)
    return auc, (max(0.0, auc - half), min(1.0, auc + half))


def _bootstrap_interval(good: Counts, failed: Counts) -> tuple[float, float] | None:
    """The stratified percentile bootstrap's 95% interval of the AUC; None with more than
    BOOTSTRAP_MAX_SCORES distinct confidences, NaN with fewer than two of either outcome."""
    if len(good) > BOOTSTRAP_MAX_SCORES:
        return None
    g, f = int(good.sum()), int(failed.sum())
    if g < 2 or f < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(_BOOTSTRAP_SEED)
    chunk = max(1, _BOOTSTRAP_CELLS_PER_CHUNK // len(good))
    aucs: list[Counts] = []
    for start in range(0, BOOTSTRAP_RESAMPLES, chunk):
        size = min(chunk, BOOTSTRAP_RESAMPLES - start)
        good_drawn = rng.multinomial(g, good / g, size=size)
        failed_drawn = rng.multinomial(f, failed / f, size=size).astype(np.float64)
        aucs.append((good_drawn * _placement_of_good(failed_drawn)).sum(axis=1) / (g * f))
    low, high = np.percentile(np.concatenate(aucs), [2.5, 97.5])
    return float(low), float(high)


def roc_auc(scores: npt.ArrayLike, labels: npt.ArrayLike) -> float:
    """ROC AUC of `scores` for labels 1 against 0 (ties count half); NaN when one class is
    missing."""
    values = np.asarray(scores, dtype=np.float64).tolist()
    marks = np.asarray(labels, dtype=np.int64).tolist()
    cells = _cells((value, "", mark) for value, mark in zip(values, marks, strict=True))
    return _auc_and_interval(*_by_score(OutcomeCells.of(cells)))[0]


@dataclass(frozen=True)
class Evaluation:
    """The figures and their Markdown."""

    traces: int
    good: int
    auc: float
    interval: tuple[float, float]
    """DeLong's 95% interval."""
    bootstrap: tuple[float, float] | None
    """The bootstrap's 95% interval; None where it was left out (too many distinct
    confidences)."""
    levels: list[LevelRate]
    failure_rate_rises: bool
    markdown: str


def _per_level(cells: OutcomeCells) -> list[LevelRate]:
    """Every level, calmest first, with its labelled traces and failure rate."""
    known = cells.level >= 0
    size = len(LEVELS)
    goods = np.bincount(cells.level[known], cells.good[known], minlength=size).astype(np.int64)
    faileds = np.bincount(cells.level[known], cells.failed[known], minlength=size).astype(np.int64)
    rows = []
    for level, good, failed in zip(LEVELS, goods.tolist(), faileds.tolist(), strict=True):
        traces = good + failed
        rows.append(LevelRate(level, traces, good, failed, failed / traces if traces else None))
    return rows


def _figure(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.3f}"


def interval_text(bootstrap: tuple[float, float] | None, delong: tuple[float, float]) -> str:
    """Both intervals in words: "(bootstrap, 2,000 resamples) a to b; (DeLong) c to d"."""
    if bootstrap is None:
        drawn = f"(bootstrap) left out, over {BOOTSTRAP_MAX_SCORES:,} distinct confidences"
    else:
        drawn = (
            f"(bootstrap, {BOOTSTRAP_RESAMPLES:,} resamples) "
            f"{_figure(bootstrap[0])} to {_figure(bootstrap[1])}"
        )
    return f"{drawn}; (DeLong) {_figure(delong[0])} to {_figure(delong[1])}"


def rate_verdict(levels: list[LevelRate]) -> str:
    """Whether the failure rate rises from each calmer level to the next one that holds
    traces (level, traces, ..., failure_rate, calmest first), in words: two levels at the same
    rate are a tie, not a fall, and a fall names where it happens."""
    held = [(row.level, row.failure_rate or 0.0) for row in levels if row.traces > 0]
    pairs = list(zip(held, held[1:], strict=False))
    falls = [(a, b) for a, b in pairs if b[1] < a[1]]
    ties = [(a, b) for a, b in pairs if b[1] == a[1]]
    if falls:
        (calm, calm_rate), (less, less_rate) = falls[0]
        return (
            f"The failure rate falls from {calm} ({calm_rate:.1%}) to {less} ({less_rate:.1%}): "
            "there the levels do not order the outcomes."
        )
    if ties:
        tied = "; ".join(f"{a} and {b} both at {a_rate:.1%}" for (a, a_rate), (b, _) in ties)
        return (
            "The failure rate never falls from a calmer level to a less calm one, and rises "
            f"except where two levels tie ({tied})."
        )
    if len(held) < 2:
        return "Only one level holds labelled traces, so there is no order to check."
    return "The failure rate rises with each less calm level that holds traces."


def evaluate_levels(
    cells: OutcomeCells | Sequence[OutcomeCell], *, unlabelled: int = 0
) -> Evaluation:
    """Figures for outcome cells (aggregate, level, good, failed); `unlabelled` traces had a
    level but no label and are left out (the text says how many)."""
    cells = as_columns(cells)
    counts = _by_score(cells)
    auc, interval = _auc_and_interval(*counts)
    bootstrap = _bootstrap_interval(*counts)
    levels = _per_level(cells)
    traces, good = sum(row.traces for row in levels), sum(row.good for row in levels)
    rates = [row.failure_rate or 0.0 for row in levels if row.traces > 0]
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
        f"95% interval {interval_text(bootstrap, interval)}",
        "",
        "| level | traces | good | failed | failure rate |",
        "|---|---|---|---|---|",
    ]
    for level, count, good_here, failed, rate in levels:
        shown = f"{rate:.1%}" if rate is not None else NONE
        lines.append(f"| {level} | {count:,} | {good_here:,} | {failed:,} | {shown} |")
    lines += ["", rate_verdict(levels)]
    text = "\n".join(lines) + "\n"
    return Evaluation(traces, good, auc, interval, bootstrap, levels, rises, text)
