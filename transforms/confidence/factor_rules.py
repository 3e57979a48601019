"""The rules a factors row must keep, as Polars expressions (docs/confidence.md lists them).

Each rule is (name, condition, reason); the first rule that holds names the row's fault. The
values the original calculator takes as they come are held to their meaning here: counts are 0
or more, no more successes than executions, scores and rates in [0, 1], a variance 0 or more,
and no field given twice under two names.
"""

from __future__ import annotations

import polars as pl

from transforms.confidence.inputs import ALIASES, CONFLICTS

__all__ = ["row_rules"]

Rule = tuple[str, pl.Expr, pl.Expr]

UNIT_COLUMNS = (
    "search_avg_score",
    "search_max_score",
    "source_agreement",
    "llm_self_confidence",
    "llm_self_eval",
    "tool_success_rate",
    "query_coverage",
)
"""Columns whose values lie in [0, 1]."""

COUNT_COLUMNS = (
    "step_index",
    "search_result_count",
    "source_count",
    "tool_execution_count",
    "tool_success_count",
    "tool_calls",
    "tool_successes",
)
"""Columns that count, 0 or more."""


def row_rules() -> list[Rule]:
    """(rule, condition, reason) in the order they are checked; the first that holds wins."""
    return [*_key_rules(), *_conflict_rules(), *_count_rules(), *_value_rules()]


def _key_rules() -> list[Rule]:
    """A row must say which trace and step it is."""
    return [
        (
            "missing_trace_id",
            pl.col("trace_id").is_null() | (pl.col("trace_id").str.strip_chars() == ""),
            pl.lit("trace_id is missing or empty; give every row the trace it belongs to"),
        ),
        (
            "missing_step_index",
            pl.col("step_index").is_null(),
            pl.lit("step_index is missing; number the plan steps of a trace 0, 1, 2, ..."),
        ),
    ]


def _conflict_rules() -> list[Rule]:
    """A convenience and the original field it stands for are not both given."""
    rules = []
    for convenience, field in CONFLICTS:
        if convenience in ALIASES:
            fix = f"{convenience} is another name for {field}; give one of them"
        else:
            fix = (
                "search_scores sets search_result_count (when not given), search_avg_score, "
                "search_max_score and search_score_variance; give the scores or those fields"
            )
        rules.append(
            (
                "conflicting_fields",
                pl.col(convenience).is_not_null() & pl.col(field).is_not_null(),
                pl.lit(f"{convenience} and {field} are both given; {fix}"),
            )
        )
    return rules


def _given(field: str, convenience: str) -> tuple[pl.Expr, pl.Expr]:
    """The value a row gives for `field` (under either name) and the name it used."""
    value = pl.coalesce(field, convenience)
    name = (
        pl.when(pl.col(convenience).is_not_null() & pl.col(field).is_null())
        .then(pl.lit(convenience))
        .otherwise(pl.lit(field))
    )
    return value, name


def _count_rules() -> list[Rule]:
    """Counts are 0 or more, and no more tools succeed than were executed."""
    rules: list[Rule] = [
        (
            "negative_count",
            pl.col(name) < 0,
            pl.format(f"{name} is {{}}; counts must be 0 or more", pl.col(name)),
        )
        for name in COUNT_COLUMNS
    ]
    successes, success_name = _given("tool_success_count", "tool_successes")
    executions, execution_name = _given("tool_execution_count", "tool_calls")
    rules.append(
        (
            "successes_exceed_calls",
            successes.fill_null(0) > executions.fill_null(0),
            pl.format(
                "{} {} exceeds {} {}",
                success_name,
                successes,
                execution_name,
                executions.fill_null(0),
            ),
        )
    )
    return rules


def _value_rules() -> list[Rule]:
    """Scores and rates lie in [0, 1], a variance is 0 or more, a trace numbers each step once."""
    rules: list[Rule] = [
        (
            "out_of_range",
            (pl.col(name) < 0) | (pl.col(name) > 1) | pl.col(name).is_nan(),
            pl.format(f"{name} is {{}}; it must lie in [0, 1]", pl.col(name)),
        )
        for name in UNIT_COLUMNS
    ]
    variance = pl.col("search_score_variance")
    rules.append(
        (
            "out_of_range",
            (variance < 0) | ~variance.is_finite(),
            pl.format("search_score_variance is {}; it must be 0 or more", variance),
        )
    )
    outside = (
        pl.col("search_scores")
        .list.eval((pl.element() < 0) | (pl.element() > 1) | pl.element().is_nan())
        .list.any()
    )
    rules.append(
        (
            "out_of_range",
            outside,
            pl.lit("search_scores holds a value outside [0, 1]; relevance scores lie in [0, 1]"),
        )
    )
    rules.append(
        (
            "duplicate_step",
            pl.len().over("trace_id", "step_index") > 1,
            pl.format(
                "trace {} has step_index {} more than once; number each step once",
                pl.col("trace_id"),
                pl.col("step_index"),
            ),
        )
    )
    return rules
