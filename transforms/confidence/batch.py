"""ConfidenceCalculator, decide_action and ConfidenceAggregator as Polars expressions over a batch.

Input: one row per plan step with the FACTOR_SCHEMA columns (from a factors table or derived
from traces; a null factor takes the original's default). `step_scores` adds each step's
sub-scores, weights, base, penalties and score; `trace_levels` aggregates a trace's steps and
decides its level. The expressions perform the object API's floating-point operations in the
same order (sums accumulated left to right with `cum_sum`, penalties multiplied one at a time),
and round with transforms.confidence.rounding, which reproduces Python's round exactly; so
both paths give identical doubles, as tests check.
"""

from __future__ import annotations

import polars as pl

from transforms.confidence.calculator import (
    FACTORS,
    LEVEL_TOLERANCE,
    RECOMMENDED_ACTIONS,
    critical_note,
    level_reason,
)
from transforms.confidence.model import FACTOR_DEFAULTS, InterventionLevel
from transforms.confidence.rounding import rate_label, round_half_even
from transforms.config.confidence import ConfidenceConfig

__all__ = [
    "FACTOR_SCHEMA",
    "STEP_SCORE_COLUMNS",
    "step_scores",
    "trace_levels",
]

_DTYPES: dict[type, pl.DataType] = {bool: pl.Boolean(), int: pl.Int64(), float: pl.Float64()}

FACTOR_SCHEMA: dict[str, pl.DataType] = {
    "trace_id": pl.String(),
    "step_index": pl.Int64(),
    **{name: _DTYPES[type(default)] for name, default in FACTOR_DEFAULTS.items()},
}
"""One plan step: its keys, then GRACE's ConfidenceFactors fields in the original's order."""

STEP_SCORE_COLUMNS = (
    "search_quality",
    "tool_success",
    *(f"w_{name}" for name in FACTORS),
    "base",
    "penalties",
    "score",
)
"""Columns `step_scores` adds."""

_VALUES = {
    "search_quality": pl.col("search_quality"),
    "tool_success": pl.col("tool_success"),
    "source_agreement": pl.col("source_agreement"),
    "llm_self_eval": pl.col("llm_self_confidence"),
    "query_coverage": pl.col("query_coverage"),
}
"""The value of each factor of the non-search mean."""


def _search_quality(config: ConfidenceConfig) -> pl.Expr:
    """The original's `_calc_search_quality`, operation for operation."""
    q = config.search_quality
    count, best = pl.col("search_result_count"), pl.col("search_max_score")
    combined = (best * q.max_weight) + (pl.col("search_avg_score") * q.avg_weight)
    variance_penalty = pl.min_horizontal(
        pl.lit(q.variance_cap), pl.col("search_score_variance") * q.variance_weight
    )
    return (
        pl.when((count == 0) & (best == 0))
        .then(0.0)
        .when(best >= q.max_alone_from)
        .then(best)
        .otherwise(pl.max_horizontal(pl.lit(0.0), combined - variance_penalty))
    )


def _tool_success() -> pl.Expr:
    """The original's `_calc_tool_success`: successes / executions, else the rate."""
    executions = pl.col("tool_execution_count")
    return (
        pl.when(executions == 0)
        .then(pl.col("tool_success_rate"))
        .otherwise(pl.col("tool_success_count") / executions)
    )


def _weights(config: ConfidenceConfig) -> dict[str, pl.Expr]:
    """w_<factor>: the factor's weight where it joins a non-search step's mean, else 0."""
    c, w = config, config.weights
    included = {
        "search_quality": pl.col("search_quality") > c.search_quality_floor,
        "tool_success": pl.lit(True),
        "source_agreement": pl.col("source_count") > c.source_count_floor,
        "llm_self_eval": pl.col("llm_self_confidence") > c.llm_self_eval_floor,
        "query_coverage": pl.col("query_coverage") > c.query_coverage_floor,
    }
    return {
        f"w_{name}": pl.when(~pl.col("is_search_step") & joins)
        .then(pl.lit(getattr(w, name)))
        .otherwise(0.0)
        for name, joins in included.items()
    }


def _base(config: ConfidenceConfig) -> pl.Expr:
    """A search step: search quality, times tool success below 1. Any other step: the
    weighted mean of the factors that joined it, summed in the original's order."""
    w = config.weights
    weighted_sum: pl.Expr = pl.lit(0.0)
    total: pl.Expr = pl.lit(0.0)
    for name in FACTORS:
        joined = pl.col(f"w_{name}") > 0
        weighted_sum = weighted_sum + pl.when(joined).then(
            _VALUES[name] * getattr(w, name)
        ).otherwise(0.0)
        total = total + pl.col(f"w_{name}")
    quality, success = pl.col("search_quality"), pl.col("tool_success")
    search = pl.when(success < 1.0).then(quality * success).otherwise(quality)
    mean = pl.when(total > 0).then(weighted_sum / total).otherwise(0.0)
    return pl.when(pl.col("is_search_step")).then(search).otherwise(mean)


def _penalized(config: ConfidenceConfig) -> tuple[pl.Expr, pl.Expr]:
    """The score after the original's `_apply_penalties`, and the list of penalties applied."""
    p = config.penalties
    search, count = pl.col("is_search_step"), pl.col("search_result_count")
    rate = pl.col("tool_success_rate")
    no_results = search & (count == 0)
    failures = rate < 1.0
    exempt = (search & (count > 0)) | (
        ~search & (pl.col("llm_self_confidence") >= p.no_sources_exempt_from)
    )
    no_sources = (pl.col("source_count") == 0) & ~exempt
    score = pl.col("base")
    score = pl.when(no_results).then(score * p.no_search_results).otherwise(score)
    multiplier = pl.lit(p.tool_failures_base) + pl.lit(p.tool_failures_per_rate) * rate
    score = pl.when(failures).then(score * multiplier).otherwise(score)
    score = pl.when(no_sources).then(score * p.no_sources).otherwise(score)
    names = pl.concat_list(
        pl.when(no_results).then(pl.lit("no_search_results")),
        pl.when(failures).then(pl.format("tool_failures(rate={})", rate_label(rate))),
        pl.when(no_sources).then(pl.lit("no_sources")),
    ).list.drop_nulls()
    return score, names


def step_scores(steps: pl.LazyFrame, config: ConfidenceConfig) -> pl.LazyFrame:
    """Each step's search quality, tool success, weights, base, penalties (names) and score.

    Null factors take the original's defaults (FACTOR_DEFAULTS) first.
    """
    filled = steps.with_columns(
        pl.col(name).fill_null(default).cast(FACTOR_SCHEMA[name])
        for name, default in FACTOR_DEFAULTS.items()
    )
    penalized, names = _penalized(config)
    clamped = pl.min_horizontal(pl.lit(1.0), pl.max_horizontal(pl.lit(0.0), penalized))
    return (
        filled.with_columns(search_quality=_search_quality(config), tool_success=_tool_success())
        .with_columns(**_weights(config))
        .with_columns(base=_base(config))
        .with_columns(penalties=names, score=round_half_even(clamped, config.score_decimals))
    )


def _aggregates(config: ConfidenceConfig, ordered: bool) -> dict[str, pl.Expr]:
    """Per trace: steps, aggregate, critical flag and the penalties of its steps (distinct,
    sorted). Ordered groups carry each row's 1-based rank in `_rank`."""
    score = pl.col("score") if ordered else pl.col("score").sort_by("step_index")
    n = pl.len().cast(pl.Float64)
    mean = score.cum_sum().last() / n
    critical = score < config.critical_check.threshold
    aggregate = {
        "mean": mean,
        "min": score.min(),
        "critical_check": pl.when(critical.any())
        .then(mean * config.critical_check.multiplier)
        .otherwise(mean),
    }
    if config.aggregation == "weighted":
        rank = pl.col("_rank") if ordered else pl.int_range(1, pl.len() + 1, dtype=pl.Int64)
        weighted = (score * rank.cast(pl.Float64)).cum_sum().last() / (n * (n + 1) / 2)
        aggregate["weighted"] = weighted
    return {
        "steps": pl.len().cast(pl.Int32),
        "aggregate": aggregate[config.aggregation],
        "_critical": critical.any() & (config.aggregation == "critical_check"),
        "penalties": pl.col("penalties")
        .list.explode(keep_nulls=False, empty_as_null=False)
        .unique()
        .sort(),
    }


def _per_trace(scored: pl.LazyFrame, config: ConfidenceConfig, ordered: bool) -> pl.LazyFrame:
    aggregates = _aggregates(config, ordered)
    if not ordered:
        return scored.group_by("trace_id").agg(**aggregates)
    row = pl.int_range(pl.len(), dtype=pl.Int64)
    run = pl.col("trace_id").rle_id()
    first_row = pl.when(run != run.shift(1).fill_null(-1)).then(row).forward_fill()
    keyed = scored.with_columns(_run=run, _rank=row - first_row + 1)
    last_rows = keyed.filter(pl.col("_run") != pl.col("_run").shift(-1).fill_null(-1))
    return pl.concat(
        [
            last_rows.select("trace_id"),
            keyed.group_by("_run", maintain_order=True).agg(**aggregates).drop("_run"),
        ],
        how="horizontal",
    )


def trace_levels(
    scored: pl.LazyFrame, config: ConfidenceConfig, *, ordered: bool = False
) -> pl.LazyFrame:
    """One row per trace: steps, aggregate, method, penalties (distinct, sorted by name),
    level, reason and recommended action.

    With `ordered`, the caller guarantees that each trace's rows are contiguous and in step
    order (as derived_factors writes them): traces are then grouped by runs of equal ids,
    without hashing the ids or sorting within traces, and come out in input order.
    """
    t = config.thresholds
    score = pl.col("aggregate")
    level_index = (
        pl.when(score >= t.silent - LEVEL_TOLERANCE)
        .then(0)
        .when(score >= t.notify - LEVEL_TOLERANCE)
        .then(1)
        .when(score >= t.confirm - LEVEL_TOLERANCE)
        .then(2)
        .otherwise(3)
    )
    levels = list(InterventionLevel)
    bands = pl.Series([level_reason(lvl, t, []) for lvl in levels], dtype=pl.String)
    penalties = pl.col("penalties")
    listed = pl.when(penalties.list.len() > 0).then("; penalties: " + penalties.list.join(", "))
    critical = pl.when(pl.col("_critical")).then(pl.lit(critical_note(config)))
    return (
        _per_trace(scored, config, ordered)
        .with_columns(_level=level_index)
        .select(
            "trace_id",
            "steps",
            "aggregate",
            method=pl.lit(config.aggregation),
            penalties=penalties,
            level=pl.lit(pl.Series([lvl.value for lvl in levels])).gather("_level"),
            reason=pl.concat_str(
                pl.lit(bands).gather("_level"),
                listed.otherwise(pl.lit("")),
                critical.otherwise(pl.lit("")),
            ),
            recommended_action=pl.lit(
                pl.Series([RECOMMENDED_ACTIONS[lvl] for lvl in levels])
            ).gather("_level"),
        )
    )
