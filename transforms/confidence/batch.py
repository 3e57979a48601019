"""ConfidenceCalculator over a batch: Polars expressions, one row per plan step.

Input: the FACTOR_SCHEMA columns (from a factors table or derived from traces; a null factor
takes the original's default). `step_scores` adds each step's sub-scores, weights, base,
penalties and score; `trace_levels` (transforms.confidence.levels, re-exported here)
aggregates a trace's steps and decides its level. The expressions perform the object API's
floating-point operations in the same order (the mean's sums left to right, penalties
multiplied one at a time) and round with transforms.confidence.exact, which reproduces
Python's round exactly; so both paths give identical doubles, as tests check.
"""

from __future__ import annotations

import polars as pl

from transforms.confidence.calculator import FACTORS
from transforms.confidence.exact import divide, hundredths, round_half_even
from transforms.confidence.levels import PENALTY_LISTS, penalty_code, trace_levels
from transforms.confidence.model import FACTOR_DEFAULTS
from transforms.config.confidence import ConfidenceConfig

__all__ = [
    "FACTOR_SCHEMA",
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
        .otherwise(divide(pl.col("tool_success_count"), executions))
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
    mean = pl.when(total > 0).then(divide(weighted_sum, total)).otherwise(0.0)
    return pl.when(pl.col("is_search_step")).then(search).otherwise(mean)


def _penalized(config: ConfidenceConfig) -> tuple[pl.Expr, pl.Expr]:
    """The score after the original's `_apply_penalties`, and the penalties applied as a code
    (levels.penalty_code: which ones, and the failure rate's two decimals). Rates lie in
    [0, 1], as the factors reader checks; a negative rate gets a null code."""
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
    slot = pl.when(failures).then(hundredths(rate) + 1).otherwise(0)
    return score, pl.when(rate >= 0).then(penalty_code(no_results, no_sources, slot))


def step_scores(steps: pl.LazyFrame, config: ConfidenceConfig) -> pl.LazyFrame:
    """Each step's search quality, tool success, weights, base, penalties (names) and score,
    and `penalty_code`, the penalties as one number for trace_levels.

    Null factors take the original's defaults (FACTOR_DEFAULTS) first.
    """
    filled = steps.with_columns(
        pl.col(name).fill_null(default).cast(FACTOR_SCHEMA[name])
        for name, default in FACTOR_DEFAULTS.items()
    )
    penalized, code = _penalized(config)
    clamped = pl.min_horizontal(pl.lit(1.0), pl.max_horizontal(pl.lit(0.0), penalized))
    return (
        filled.with_columns(search_quality=_search_quality(config), tool_success=_tool_success())
        .with_columns(**_weights(config))
        .with_columns(base=_base(config))
        .with_columns(penalty_code=code, score=round_half_even(clamped, config.score_decimals))
        .with_columns(penalties=pl.lit(PENALTY_LISTS).gather("penalty_code"))
    )
