"""ConfidenceAggregator and decide_action over a batch: one level per trace.

The original sums a trace's step scores with Python's sum(), left to right. Polars' group
sums use a different order (they differ from Python in the last bit on about half of the
groups), so the sums here are sequential numpy additions, one step position at a time over
all traces at once: the same additions in the same order as the object API, in one pass over
the rows. Penalty names travel as small codes (`penalty_code`, from step_scores), merged per
trace with bitwise ors, and become names and reasons once per distinct combination.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import polars as pl

from transforms.confidence.calculator import (
    LEVEL_TOLERANCE,
    RECOMMENDED_ACTIONS,
    critical_note,
    level_reason,
)
from transforms.confidence.exact import divide, two_decimals
from transforms.confidence.model import InterventionLevel
from transforms.config.confidence import ConfidenceConfig

__all__ = ["PENALTY_LISTS", "cap_note", "penalty_code", "trace_levels"]

RATE_SLOTS = 102
"""Tool-failure slots of a penalty code: 0 none, 1 + k for the rate label k / 100 (k 0..100)."""

_LEVELS = list(InterventionLevel)


def _tool_failures(hundredths_of_rate: int) -> str:
    return f"tool_failures(rate={two_decimals(hundredths_of_rate)})"


def penalty_code(no_results: pl.Expr, no_sources: pl.Expr, slot: pl.Expr) -> pl.Expr:
    """A step's penalties as one number: bit 0 no_search_results, bit 1 no_sources, and
    4 x the tool-failure slot."""
    return no_results.cast(pl.Int64) + no_sources.cast(pl.Int64) * 2 + slot * 4


PENALTY_LISTS = pl.Series(
    [
        ["no_search_results"] * (bits & 1)
        + ([_tool_failures(slot - 1)] if slot else [])
        + ["no_sources"] * (bits >> 1)
        for slot in range(RATE_SLOTS)
        for bits in range(4)
    ],
    dtype=pl.List(pl.String),
)
"""The penalty names of each code, in the order they were applied."""


def segmented_sums(
    values: npt.NDArray[np.float64], lengths: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    """Per run of `lengths[i]` consecutive values (rows, when `values` has columns), their
    float sum from 0.0, left to right (CPython 3.11's sum()), column by column; one vectorized
    addition per position, longest runs first."""
    starts = np.cumsum(lengths) - lengths
    order = np.argsort(-lengths, kind="stable")
    first, longest = starts[order], lengths[order]
    sums = np.zeros((len(lengths), *values.shape[1:]), dtype=np.float64)
    still = len(lengths)
    for position in range(int(longest[0]) if len(longest) else 0):
        while still and longest[still - 1] <= position:
            still -= 1
        sums[:still] += values[first[:still] + position]
    out = np.empty_like(sums)
    out[order] = sums
    return out


_PARTS = {
    "trace_id": pl.String(),
    "steps": pl.Int32(),
    "_sum": pl.Float64(),
    "_weighted_sum": pl.Float64(),
    "_min": pl.Float64(),
    "_bits": pl.Int64(),
    "_lo": pl.UInt64(),
    "_hi": pl.UInt64(),
}
"""What _trace_parts gives per trace."""


def _failure_masks(
    codes: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """The tool-failure label of each penalty code as one bit of 101, in two words."""
    slot = codes >> 2
    low = (slot >= 1) & (slot <= 64)
    high = slot > 64
    one = np.uint64(1)
    lo = np.where(low, one << (np.where(low, slot, 1) - 1).astype(np.uint64), 0)
    hi = np.where(high, one << (np.where(high, slot, 65) - 65).astype(np.uint64), 0)
    return lo.astype(np.uint64), hi.astype(np.uint64)


def _trace_parts(frame: pl.DataFrame) -> pl.DataFrame:
    """One row per trace of contiguous step rows (trace_id, score, penalty_code, _start): its
    steps, plain and rank-weighted sums (left to right), minimum, and penalties merged."""
    start = frame["_start"].to_numpy()
    firsts = np.flatnonzero(start)
    lengths = np.diff(np.append(firsts, len(start))).astype(np.int64)
    scores = frame["score"].to_numpy().astype(np.float64)
    ranks = np.arange(len(start)) - np.repeat(firsts, lengths) + 1
    codes = frame["penalty_code"].fill_null(0).to_numpy().astype(np.int64)
    lo, hi = _failure_masks(codes)
    if not len(firsts):
        return pl.DataFrame(schema=_PARTS)
    sums = segmented_sums(np.column_stack([scores, scores * ranks]), lengths)
    return pl.DataFrame(
        {
            "trace_id": frame["trace_id"].gather(firsts),
            "steps": lengths,
            "_sum": sums[:, 0],
            "_weighted_sum": sums[:, 1],
            "_min": np.minimum.reduceat(scores, firsts),
            "_bits": np.bitwise_or.reduceat(codes & 3, firsts),
            "_lo": np.bitwise_or.reduceat(lo, firsts),
            "_hi": np.bitwise_or.reduceat(hi, firsts),
        },
        schema=_PARTS,
    )


def _per_trace(scored: pl.LazyFrame, config: ConfidenceConfig) -> pl.LazyFrame:
    """_PARTS of each trace, and whether a critical check found a step below its threshold."""
    trace = pl.col("trace_id")
    return (
        scored.select(
            "trace_id", "score", "penalty_code", _start=(trace != trace.shift(1)).fill_null(True)
        )
        .map_batches(_trace_parts, schema=_PARTS)
        .with_columns(
            _critical=(pl.col("_min") < config.critical_check.threshold)
            & (config.aggregation == "critical_check")
        )
    )


def _aggregate(config: ConfidenceConfig) -> pl.Expr:
    """The original's aggregate of the method configured, from the per-trace parts."""
    n = pl.col("steps").cast(pl.Int64)
    mean = divide(pl.col("_sum"), n)
    multiplier = config.critical_check.multiplier
    return {
        "mean": mean,
        "min": pl.col("_min"),
        "weighted": divide(pl.col("_weighted_sum"), n * (n + 1) // 2),
        "critical_check": pl.when("_critical").then(mean * multiplier).otherwise(mean),
    }[config.aggregation]


def cap_note(cap: float) -> str:
    """What the reason adds when the trace's outcome capped its confidence."""
    return f"; capped at {cap} by the trace's outcome (outcome.confidence, or a blank answer)"


def _decisions(frame: pl.DataFrame, config: ConfidenceConfig) -> pl.DataFrame:
    """penalties and reason of each row of (_level, _bits, _lo, _hi, _critical, _capped_at),
    built once per distinct combination."""
    keys = ["_level", "_bits", "_lo", "_hi", "_critical", "_capped_at"]
    distinct = frame.select(keys).unique(maintain_order=True)
    names, reasons = [], []
    for level, bits, lo, hi, critical, capped_at in distinct.iter_rows():
        listed = ["no_search_results"] * (bits & 1) + ["no_sources"] * (bits >> 1)
        mask = int(lo) | int(hi) << 64
        listed += [_tool_failures(k) for k in range(101) if mask >> k & 1]
        note = critical_note(config) if critical else ""
        note += cap_note(capped_at) if capped_at is not None else ""
        names.append(listed)
        reasons.append(level_reason(_LEVELS[level], config.thresholds, listed, note))
    decided = distinct.with_columns(
        penalties=pl.Series(names, dtype=pl.List(pl.String)),
        reason=pl.Series(reasons, dtype=pl.String),
    )
    return frame.join(decided, on=keys, how="left", maintain_order="left", nulls_equal=True).select(
        "penalties", "reason"
    )


def _capped(decided: pl.LazyFrame, caps: pl.LazyFrame | None) -> pl.LazyFrame:
    """The aggregate lowered to the trace's cap (trace_id, cap) where the cap is below it;
    `_capped_at` is the cap that applied, else null."""
    if caps is None:
        return decided.with_columns(_capped_at=pl.lit(None, pl.Float64))
    joined = decided.join(caps, on="trace_id", how="left", maintain_order="left")
    below = pl.col("cap") < pl.col("aggregate")
    return joined.with_columns(
        _capped_at=pl.when(below).then(pl.col("cap")),
        aggregate=pl.when(below).then(pl.col("cap")).otherwise(pl.col("aggregate")),
    ).drop("cap")


def trace_levels(
    scored: pl.LazyFrame,
    config: ConfidenceConfig,
    *,
    ordered: bool = False,
    caps: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """One row per trace: steps, aggregate, method, penalties (distinct, sorted by name),
    level, reason and recommended action, from step_scores' rows (trace_id, step_index,
    score, penalty_code).

    With `ordered`, the caller guarantees that each trace's rows are contiguous and in step
    order (as derived_factors writes them) and traces come out in input order; otherwise the
    rows are sorted by trace and step first, and traces come out sorted by id. `caps`
    (trace_id, cap; derived mode's outcome.confidence) lowers a trace's aggregate to its cap.
    """
    t = config.thresholds
    rows = scored if ordered else scored.sort("trace_id", "step_index")
    score = pl.col("aggregate")
    level = (
        pl.when(score >= t.silent - LEVEL_TOLERANCE)
        .then(0)
        .when(score >= t.notify - LEVEL_TOLERANCE)
        .then(1)
        .when(score >= t.confirm - LEVEL_TOLERANCE)
        .then(2)
        .otherwise(3)
    )
    decided = _capped(
        _per_trace(rows, config).with_columns(aggregate=_aggregate(config)), caps
    ).with_columns(_level=level)
    keys = pl.struct("_level", "_bits", "_lo", "_hi", "_critical", "_capped_at")
    decision = pl.Struct({"penalties": pl.List(pl.String), "reason": pl.String})
    return decided.with_columns(
        _decision=keys.map_batches(
            lambda s: _decisions(s.struct.unnest(), config).to_struct(s.name),
            return_dtype=decision,
            is_elementwise=True,
        )
    ).select(
        "trace_id",
        "steps",
        "aggregate",
        method=pl.lit(config.aggregation),
        penalties=pl.col("_decision").struct.field("penalties"),
        level=pl.lit(pl.Series([lvl.value for lvl in _LEVELS])).gather("_level"),
        reason=pl.col("_decision").struct.field("reason"),
        recommended_action=pl.lit(pl.Series([RECOMMENDED_ACTIONS[lvl] for lvl in _LEVELS])).gather(
            "_level"
        ),
    )
