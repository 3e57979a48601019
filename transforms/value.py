"""The KnowledgePulse value score (SPEC section 2) as vectorized Polars expressions.

Every expression follows the SDK's `evaluateValue` operation for operation, in float64 and in
the same order, so a batch score equals the reference implementation bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from transforms.config.scoring import FACTORS, ProfileWeights

__all__ = ["complexity", "outcome_confidence", "tool_diversity", "value_features", "value_score"]

OVERRIDE_RULES = ("single_thought", "error_recovery_bonus", "low_tool_diversity")
"""Names of the rule overrides, in the order they apply."""

_FIRED_BY_CODE = pl.Series(
    [[name for bit, name in enumerate(OVERRIDE_RULES) if code >> bit & 1] for code in range(8)],
    dtype=pl.List(pl.String),
)
_STEPS = pl.col("steps")
_TYPE = pl.element().struct.field("type")
_TOOL = pl.element().struct.field("tool_name")


def _sum_in_order(frame: pl.LazyFrame, name: str, terms: dict[str, pl.Expr]) -> pl.LazyFrame:
    """Add `name` = the terms summed left to right, each term rounded on its own first.

    Polars rewrites `a * b + c` into a fused multiply-add, and its horizontal sum does not add
    left to right; either can move the result by an ulp from the SDK's JavaScript arithmetic.
    Materializing the terms as columns first keeps the reference's exact rounding.
    """
    staged = frame.with_columns(**terms)
    total = pl.col(next(iter(terms)))
    for term in list(terms)[1:]:
        total = total + pl.col(term)
    return staged.with_columns(total.alias(name)).drop(list(terms))


def step_count(steps: pl.Expr = _STEPS) -> pl.Expr:
    """len(steps)."""
    return steps.list.len().cast(pl.Float64)


def unique_type_count(steps: pl.Expr = _STEPS) -> pl.Expr:
    """Number of distinct step types."""
    return steps.list.eval(_TYPE.n_unique()).list.first().fill_null(0).cast(pl.Float64)


def error_recovery_count(steps: pl.Expr = _STEPS) -> pl.Expr:
    """Number of error_recovery steps."""
    return (
        steps.list.eval((_TYPE == "error_recovery").sum())
        .list.first()
        .fill_null(0)
        .cast(pl.Float64)
    )


def unique_tool_count(steps: pl.Expr = _STEPS) -> pl.Expr:
    """Number of distinct tool names among the steps that carry a tool."""
    return steps.list.eval(_TOOL.drop_nulls().n_unique()).list.first().fill_null(0).cast(pl.Float64)


def uses_tools(steps: pl.Expr = _STEPS) -> pl.Expr:
    """True when any step carries a tool, whatever its type (`steps.some(s => s.tool)`)."""
    return steps.list.eval(_TOOL.is_not_null().any()).list.first().fill_null(False)


def _divide(numerator: pl.Expr, denominator: float) -> pl.Expr:
    """numerator / denominator, correctly rounded.

    Polars divides a float column by a scalar as a multiplication by the reciprocal, which is
    off by an ulp for about a third of the values (n / 20, say); dividing by a column is exact.
    """
    return numerator / (numerator * 0.0 + denominator)


def complexity(counted: pl.LazyFrame) -> pl.LazyFrame:
    """Add C = min(1, (uniqueTypes/4)*0.5 + (errorRecovery > 0 ? 0.3 : 0) + (len/20)*0.2)."""
    summed = _sum_in_order(
        counted,
        "complexity",
        {
            "_c_types": (pl.col("unique_types") / 4.0) * 0.5,
            "_c_recovery": pl.when(pl.col("error_recovery") > 0).then(0.3).otherwise(0.0),
            "_c_length": _divide(pl.col("n_steps"), 20.0) * 0.2,
        },
    )
    return summed.with_columns(
        pl.min_horizontal(pl.lit(1.0), pl.col("complexity")).alias("complexity")
    )


def tool_diversity(unique_tools: pl.Expr, n_steps: pl.Expr) -> pl.Expr:
    """D = min(1, (uniqueTools / max(1, len)) * 3)."""
    return pl.min_horizontal(
        pl.lit(1.0), (unique_tools / pl.max_horizontal(pl.lit(1.0), n_steps)) * 3.0
    )


def outcome_confidence(confidence: pl.Expr, success: pl.Expr) -> pl.Expr:
    """O = confidence * (success ? 1.0 : 0.3); a null success (no outcome recorded) is falsy,
    as in the SDK."""
    return confidence * pl.when(success.fill_null(False)).then(1.0).otherwise(0.3)


def profile_name(task_domain: pl.Expr, profiles: Mapping[str, ProfileWeights]) -> pl.Expr:
    """The profile chosen by exact, case-sensitive match of the domain; otherwise `default`."""
    named = [name for name in profiles if name != "default"]
    return (
        task_domain.replace_strict(named, named, default="default", return_dtype=pl.String)
        .fill_null("default")
        .alias("profile")
    )


def _weight(profile: pl.Expr, profiles: Mapping[str, ProfileWeights], factor: str) -> pl.Expr:
    """The weight of `factor` in each row's profile."""
    names = list(profiles)
    weights = [getattr(profiles[name], factor) for name in names]
    return profile.replace_strict(names, weights, return_dtype=pl.Float64)


def value_features(rows: pl.LazyFrame, profiles: Mapping[str, ProfileWeights]) -> pl.LazyFrame:
    """Add the step statistics, C, D, O, the profile and its weight of each of `FACTORS`.

    `rows` needs `steps` (list of structs with `type` and `tool_name`), `task_domain`,
    `success` and `confidence`.
    """
    counted = rows.with_columns(
        n_steps=step_count(),
        unique_types=unique_type_count(),
        error_recovery=error_recovery_count(),
        unique_tools=unique_tool_count(),
        has_tool=uses_tools(),
        single_thought=(_STEPS.list.len() == 1)
        & (_STEPS.list.first().struct.field("type") == "thought").fill_null(False),
        profile=profile_name(pl.col("task_domain"), profiles),
    )
    profile = pl.col("profile")
    return complexity(counted).with_columns(
        tool_diversity=tool_diversity(pl.col("unique_tools"), pl.col("n_steps")),
        outcome_confidence=outcome_confidence(pl.col("confidence"), pl.col("success")),
        **{f"w_{factor}": _weight(profile, profiles, factor) for factor in FACTORS},
    )


def value_score(features: pl.LazyFrame, share_threshold: float) -> pl.LazyFrame:
    """Add `score`, `overrides` (the rules that fired, in order) and `shareable`.

    `features` is the output of `value_features` with a `novelty` column added.
    """
    features = _sum_in_order(
        features,
        "weighted_score",
        {f"_s_{factor}": pl.col(factor) * pl.col(f"w_{factor}") for factor in FACTORS},
    )
    weighted = pl.col("weighted_score")
    single_thought = pl.col("single_thought")
    recovery_bonus = (pl.col("error_recovery") > 2) & pl.col("success").fill_null(False)
    low_diversity = (pl.col("unique_tools") <= 1) & pl.col("has_tool")
    after_rule1 = pl.when(single_thought).then(0.1).otherwise(weighted)
    after_rule2 = (
        pl.when(recovery_bonus)
        .then(pl.min_horizontal(pl.lit(1.0), after_rule1 + 0.1))
        .otherwise(after_rule1)
    )
    after_rule3 = (
        pl.when(low_diversity)
        .then(pl.max_horizontal(pl.lit(0.0), after_rule2 - 0.1))
        .otherwise(after_rule2)
    )
    # Which rules fired, as a 3-bit code, then the matching list of names: much cheaper than
    # building a list per row from three optional strings.
    code = (
        single_thought.cast(pl.UInt8)
        + recovery_bonus.cast(pl.UInt8) * 2
        + low_diversity.cast(pl.UInt8) * 4
    )
    fired = pl.lit(_FIRED_BY_CODE).gather(code)
    return features.with_columns(score=after_rule3, overrides=fired).with_columns(
        shareable=pl.col("score") >= share_threshold
    )
