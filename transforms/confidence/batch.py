"""ConfidenceCalculator, decide_action and ConfidenceAggregator as Polars expressions over a batch.

Input: one row per plan step with the FACTOR_SCHEMA columns (from a factors table or derived
from traces). `step_scores` adds each step's breakdown, penalties and score; `trace_levels`
aggregates a trace's steps and decides its level. Same rules as transforms.confidence.calculator.
"""

from __future__ import annotations

import polars as pl

from tracegrade.confidence_config import ConfidenceConfig
from transforms.confidence.calculator import FACTORS, RECOMMENDED_ACTIONS, level_reason
from transforms.confidence.model import InterventionLevel

__all__ = ["FACTOR_SCHEMA", "STEP_SCORE_COLUMNS", "step_scores", "trace_levels"]

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

_PENALTY_ORDER = ("zero_search_results", "no_sources", "tool_failure")


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


def step_scores(steps: pl.LazyFrame, config: ConfidenceConfig) -> pl.LazyFrame:
    """Each step's sub-scores, weights, base, penalties (names) and clamped score."""
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
    conditions = {
        name: condition & pl.lit(getattr(amounts, name) > 0)
        for name, condition in _penalty_conditions().items()
    }
    penalty = pl.sum_horizontal(
        *(
            pl.when(cond).then(getattr(amounts, name)).otherwise(0.0)
            for name, cond in conditions.items()
        )
    )
    names = pl.concat_list(
        *(pl.when(conditions[name]).then(pl.lit(name)) for name in _PENALTY_ORDER)
    ).list.drop_nulls()
    return with_weights.with_columns(
        base=pl.when(search).then(search_base).otherwise(mean_base),
        penalty=penalty,
        penalties=names,
    ).with_columns(score=(pl.col("base") - pl.col("penalty")).clip(0.0, 1.0))


def _aggregate(method: str) -> pl.Expr:
    score = pl.col("score").sort_by("step_index")
    if method == "mean":
        return score.mean()
    if method == "min":
        return score.min()
    rank = pl.int_range(1, pl.len() + 1, dtype=pl.Int64).cast(pl.Float64)
    n = pl.len().cast(pl.Float64)
    return (rank * score).sum() / (n * (n + 1) / 2)


def trace_levels(scored: pl.LazyFrame, config: ConfidenceConfig) -> pl.LazyFrame:
    """One row per trace: steps, aggregate, method, penalties (distinct, sorted), level, reason
    and recommended action."""
    method = config.aggregation
    t = config.thresholds
    per_trace = scored.group_by("trace_id").agg(
        steps=pl.len().cast(pl.Int32),
        aggregate=_aggregate(method),
        penalties=pl.col("penalties")
        .list.explode(keep_nulls=False, empty_as_null=False)
        .unique()
        .sort(),
    )
    score = pl.col("aggregate")
    level = (
        pl.when(score >= t.silent)
        .then(pl.lit(InterventionLevel.SILENT.value))
        .when(score >= t.notify)
        .then(pl.lit(InterventionLevel.NOTIFY.value))
        .when(score >= t.confirm)
        .then(pl.lit(InterventionLevel.CONFIRM.value))
        .otherwise(pl.lit(InterventionLevel.ESCALATE.value))
    )
    bands = {lvl.value: level_reason(lvl, t, []) for lvl in InterventionLevel}
    actions = {lvl.value: action for lvl, action in RECOMMENDED_ACTIONS.items()}
    band = pl.col("level").replace_strict(bands, return_dtype=pl.String)
    penalties = pl.col("penalties").list.join(", ")
    return per_trace.with_columns(method=pl.lit(method), level=level).with_columns(
        reason=pl.when(pl.col("penalties").list.len() > 0)
        .then(pl.concat_str(band, pl.lit("; penalties: "), penalties))
        .otherwise(band),
        recommended_action=pl.col("level").replace_strict(actions, return_dtype=pl.String),
    )
