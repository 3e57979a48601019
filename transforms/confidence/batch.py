"""ConfidenceCalculator, decide_action and ConfidenceAggregator as Polars expressions over a batch.

Input: one row per plan step with the FACTOR_SCHEMA columns (from a factors table or derived
from traces). `step_scores` adds each step's breakdown, penalties and score; `trace_levels`
aggregates a trace's steps and decides its level. Same rules as transforms.confidence.calculator.
"""

from __future__ import annotations

import polars as pl

from transforms.confidence.calculator import FACTORS, RECOMMENDED_ACTIONS, level_reason
from transforms.confidence.model import InterventionLevel
from transforms.config.confidence import ConfidenceConfig

__all__ = [
    "FACTOR_SCHEMA",
    "PENALTY_NAMES",
    "STEP_SCORE_COLUMNS",
    "step_scores",
    "trace_levels",
]

FACTOR_SCHEMA: dict[str, pl.DataType] = {
    "trace_id": pl.String(),
    "step_index": pl.Int64(),
    "is_search_step": pl.Boolean(),
    "search_result_count": pl.Int64(),
    "search_score_mean": pl.Float64(),
    "tool_calls": pl.Int64(),
    "tool_successes": pl.Int64(),
    "source_count": pl.Int64(),
    "source_agreement": pl.Float64(),
    "llm_self_eval": pl.Float64(),
    "query_coverage": pl.Float64(),
}
"""One plan step's factors; search_score_mean is the mean of its scores clamped to [0, 1]."""

STEP_SCORE_COLUMNS = (
    *FACTORS,
    *(f"w_{name}" for name in FACTORS),
    "base",
    "penalty",
    "penalties",
    "score",
)
"""Columns `step_scores` adds."""

PENALTY_NAMES = ("zero_search_results", "no_sources", "tool_failure")
"""The penalties, in the order they are applied and listed."""


def _search_quality(expected_results: int) -> pl.Expr:
    count = pl.col("search_result_count")
    volume = pl.min_horizontal(count, pl.lit(expected_results)).cast(pl.Float64) / expected_results
    return (
        pl.when(count.is_null())
        .then(None)
        .when(count <= 0)
        .then(0.0)
        .otherwise(volume * pl.col("search_score_mean").fill_null(1.0))
    )


def _penalty_conditions() -> dict[str, pl.Expr]:
    return {
        "zero_search_results": (pl.col("search_result_count") == 0).fill_null(False),
        "no_sources": (pl.col("source_count") == 0).fill_null(False),
        "tool_failure": pl.col("tool_successes") < pl.col("tool_calls"),
    }


_NAMES_BY_CODE = pl.Series(
    [[name for bit, name in enumerate(PENALTY_NAMES) if code >> bit & 1] for code in range(8)],
    dtype=pl.List(pl.String),
)
"""Penalty names of each code (bit i set: PENALTY_NAMES[i] applied), in configuration order."""


def step_scores(steps: pl.LazyFrame, config: ConfidenceConfig) -> pl.LazyFrame:
    """Each step's sub-scores, weights, base, penalties (names) and clamped score.

    Also adds `penalty_code`, the applied penalties as bits of PENALTY_NAMES, which
    `trace_levels` combines per trace.
    """
    w = config.weights
    search = pl.col("is_search_step")
    calls = pl.col("tool_calls")
    with_values = steps.with_columns(
        search_quality=_search_quality(config.expected_results),
        tool_success=pl.when(calls > 0).then(pl.col("tool_successes") / calls),
    )
    included = {
        "search_quality": pl.col("search_quality") > 0,
        "tool_success": pl.col("tool_success").is_not_null(),
        "source_agreement": (pl.col("source_count") > 1) & pl.col("source_agreement").is_not_null(),
        "llm_self_eval": pl.col("llm_self_eval") > config.llm_self_eval_floor,
        "query_coverage": pl.col("query_coverage").is_not_null(),
    }
    weights = {
        f"w_{name}": pl.when(~search & condition.fill_null(False))
        .then(pl.lit(getattr(w, name)))
        .otherwise(0.0)
        for name, condition in included.items()
    }
    with_weights = with_values.with_columns(**weights)
    total = pl.sum_horizontal(*(pl.col(f"w_{name}") for name in FACTORS))
    weighted = pl.sum_horizontal(
        *(pl.col(f"w_{name}") * pl.col(name).fill_null(0.0) for name in FACTORS)
    )
    search_base = pl.col("search_quality").fill_null(0.0) * pl.col("tool_success").fill_null(1.0)
    mean_base = pl.when(total > 0).then(weighted / total).otherwise(0.0)
    amounts = config.penalties
    conditions = _penalty_conditions()
    active = [name for name in PENALTY_NAMES if getattr(amounts, name) > 0]
    code = pl.sum_horizontal(
        pl.lit(0, pl.UInt8),
        *(conditions[name].cast(pl.UInt8) * (1 << PENALTY_NAMES.index(name)) for name in active),
    ).cast(pl.UInt8)
    penalty = pl.sum_horizontal(
        pl.lit(0.0),
        *(pl.when(conditions[name]).then(getattr(amounts, name)).otherwise(0.0) for name in active),
    )
    return with_weights.with_columns(
        base=pl.when(search).then(search_base).otherwise(mean_base),
        penalty=penalty,
        penalty_code=code,
    ).with_columns(
        score=(pl.col("base") - pl.col("penalty")).clip(0.0, 1.0),
        penalties=pl.lit(_NAMES_BY_CODE).gather(pl.col("penalty_code")),
    )


def _aggregate(method: str, ordered: bool) -> pl.Expr:
    """The trace aggregate; ordered groups carry each row's 1-based rank in `_rank`."""
    score = pl.col("score") if ordered else pl.col("score").sort_by("step_index")
    if method == "mean":
        return score.mean()
    if method == "min":
        return score.min()
    rank = pl.col("_rank") if ordered else pl.int_range(1, pl.len() + 1, dtype=pl.Int64)
    n = pl.len().cast(pl.Float64)
    return (rank.cast(pl.Float64) * score).sum() / (n * (n + 1) / 2)


def trace_levels(
    scored: pl.LazyFrame, config: ConfidenceConfig, *, ordered: bool = False
) -> pl.LazyFrame:
    """One row per trace: steps, aggregate, method, penalties (distinct, sorted by name),
    level, reason and recommended action.

    With `ordered`, the caller guarantees that each trace's rows are contiguous and in step
    order (as derived_factors writes them): traces are then grouped by runs of equal ids,
    without hashing the ids or sorting within traces, and come out in input order.
    """
    method = config.aggregation
    t = config.thresholds
    aggregates = {
        "steps": pl.len().cast(pl.Int32),
        "aggregate": _aggregate(method, ordered),
        "penalty_code": pl.col("penalty_code").bitwise_or(),
    }
    if ordered:
        row = pl.int_range(pl.len(), dtype=pl.Int64)
        run = pl.col("trace_id").rle_id()
        first_row = pl.when(run != run.shift(1).fill_null(-1)).then(row).forward_fill()
        keyed = scored.with_columns(_run=run, _rank=row - first_row + 1)
        last_rows = keyed.filter(pl.col("_run") != pl.col("_run").shift(-1).fill_null(-1))
        per_trace = pl.concat(
            [
                last_rows.select("trace_id"),
                keyed.group_by("_run", maintain_order=True).agg(**aggregates).drop("_run"),
            ],
            how="horizontal",
        )
    else:
        per_trace = scored.group_by("trace_id").agg(**aggregates)
    score = pl.col("aggregate")
    levels = list(InterventionLevel)
    level_index = (
        pl.when(score >= t.silent)
        .then(0)
        .when(score >= t.notify)
        .then(1)
        .when(score >= t.confirm)
        .then(2)
        .otherwise(3)
        .cast(pl.Int64)
    )
    sorted_names = [sorted(names) for names in _NAMES_BY_CODE.to_list()]
    reasons = pl.Series(
        [level_reason(lvl, t, sorted_names[code]) for lvl in levels for code in range(8)],
        dtype=pl.String,
    )
    level_names = pl.Series([lvl.value for lvl in levels], dtype=pl.String)
    actions = pl.Series([RECOMMENDED_ACTIONS[lvl] for lvl in levels], dtype=pl.String)
    code = pl.col("penalty_code").cast(pl.Int64)
    return per_trace.with_columns(_level=level_index).select(
        "trace_id",
        "steps",
        "aggregate",
        method=pl.lit(method),
        penalties=pl.lit(pl.Series(sorted_names, dtype=pl.List(pl.String))).gather(code),
        level=pl.lit(level_names).gather(pl.col("_level")),
        reason=pl.lit(reasons).gather(pl.col("_level") * 8 + code),
        recommended_action=pl.lit(actions).gather(pl.col("_level")),
    )
