"""ConfidenceCalculator, decide_action and ConfidenceAggregator beyond the hand-worked cases:
every constant set from the configuration, in both paths, and the decision's reason."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from test_original_cases import case_inputs

from transforms.confidence import (
    ConfidenceAggregator,
    ConfidenceCalculator,
    ConfidenceFactors,
    ConfidenceScore,
    InterventionLevel,
    step_scores,
)
from transforms.confidence.batch import FACTOR_SCHEMA
from transforms.config.confidence import (
    ConfidenceConfig,
    ConfidenceWeights,
    CriticalCheck,
    Penalties,
    SearchQuality,
    Thresholds,
)

BLEND = case_inputs("S3")
"""S3 of the hand-worked cases: search quality .517 by the blend."""


def both(inputs: dict[str, Any], config: ConfidenceConfig) -> tuple[float, tuple[str, ...]]:
    """Score and penalties of one step; asserts that the batch path gives the same."""
    result = ConfidenceCalculator(config).calculate(ConfidenceFactors(**inputs))
    row = {"trace_id": "t", "step_index": 0, **inputs}
    batch = step_scores(pl.DataFrame([row], schema=FACTOR_SCHEMA).lazy(), config).collect()
    assert (batch["score"][0], tuple(batch["penalties"][0])) == (
        result.score,
        result.penalties_applied,
    )
    return result.score, result.penalties_applied


@pytest.mark.parametrize(
    ("search_quality", "expected"),
    [
        (SearchQuality(max_alone_from=0.5), 0.55),  # .55 >= .5: the best score alone
        (SearchQuality(max_weight=0.5, avg_weight=0.5), round(0.55 * 0.5 + 0.45 * 0.5 - 0.003, 3)),
        (SearchQuality(variance_weight=10.0), round(0.385 + 0.135 - 0.1, 3)),  # .01 * 10
        (SearchQuality(variance_weight=10.0, variance_cap=0.05), round(0.385 + 0.135 - 0.05, 3)),
    ],
)
def test_search_quality_constants(search_quality: SearchQuality, expected: float) -> None:
    assert both(BLEND, ConfidenceConfig(search_quality=search_quality)) == (expected, ())


def test_weights_and_floors() -> None:
    coverage = dict(query_coverage=0.11, source_count=1)
    config = ConfidenceConfig(weights=ConfidenceWeights(query_coverage=0.2))
    assert both(coverage, config)[0] == round((0.4 + 0.11 * 0.2) / (0.4 + 0.2), 3)
    assert both(coverage, ConfidenceConfig(query_coverage_floor=0.2))[0] == 1.0
    low = dict(llm_self_confidence=0.55, source_count=1)
    assert both(low, ConfidenceConfig(llm_self_eval_floor=0.5))[0] == round(
        (0.4 + 0.55 * 0.3) / (0.4 + 0.3), 3
    )
    sources = dict(source_count=2, source_agreement=0.0)
    assert both(sources, ConfidenceConfig(source_count_floor=2))[0] == 1.0
    quality = dict(
        search_result_count=1, search_max_score=0.7, search_avg_score=0.7, source_count=1
    )
    assert both(quality, ConfidenceConfig(search_quality_floor=0.8))[0] == 1.0
    assert both(quality, ConfidenceConfig())[0] == round((0.7 * 0.6 + 0.4) / (0.6 + 0.4), 3)


def test_penalty_multipliers() -> None:
    config = ConfidenceConfig(
        penalties=Penalties(
            no_search_results=0.25,
            tool_failures_base=0.5,
            tool_failures_per_rate=0.5,
            no_sources=0.1,
            no_sources_exempt_from=0.9,
        )
    )
    searched = dict(is_search_step=True, search_max_score=0.8, search_avg_score=0.8)
    assert both(searched, config) == (
        round(0.8 * 0.25 * 0.1, 3),
        ("no_search_results", "no_sources"),
    )
    failing = dict(tool_success_rate=0.5, source_count=1)
    assert both(failing, config) == (
        round(0.5 * (0.5 + 0.5 * 0.5), 3),
        ("tool_failures(rate=0.50)",),
    )
    confident = dict(llm_self_confidence=0.85)  # exempt at .8 by default, not at .9
    assert both(confident, config)[1] == ("no_sources",)
    assert both(confident, ConfidenceConfig())[1] == ()


def test_score_decimals() -> None:
    # S8 before rounding: .6412500000000001
    s8 = case_inputs("S8")
    assert both(s8, ConfidenceConfig(score_decimals=2))[0] == 0.64
    assert both(s8, ConfidenceConfig(score_decimals=0))[0] == 1.0


def test_critical_check_constants() -> None:
    config = ConfidenceConfig(
        aggregation="critical_check", critical_check=CriticalCheck(threshold=0.5, multiplier=0.5)
    )
    values = [ConfidenceScore(0.8), ConfidenceScore(0.4)]
    assert ConfidenceAggregator(config).aggregate(values) == (0.8 + 0.4) / 2 * 0.5
    assert ConfidenceAggregator(config).aggregate_with_critical_check(values, 0.3) == (
        (0.8 + 0.4) / 2,
        False,
    )


@pytest.mark.parametrize(
    ("score", "level"),
    [
        (1.0, InterventionLevel.SILENT),
        (0.9, InterventionLevel.SILENT),
        (0.8999, InterventionLevel.NOTIFY),
        (0.7, InterventionLevel.NOTIFY),
        (0.6999, InterventionLevel.CONFIRM),
        (0.4, InterventionLevel.CONFIRM),
        (0.3999, InterventionLevel.ESCALATE),
        (0.0, InterventionLevel.ESCALATE),
    ],
)
def test_decide_action_at_each_threshold_boundary(score: float, level: InterventionLevel) -> None:
    decision = ConfidenceCalculator().decide_action(ConfidenceScore(score))
    assert decision.level is level
    assert decision.recommended_action


def test_decide_action_uses_configured_thresholds_and_names_penalties() -> None:
    config = ConfidenceConfig(thresholds=Thresholds(silent=0.5, notify=0.3, confirm=0.1))
    decision = ConfidenceCalculator(config).decide_action(
        ConfidenceScore(0.35, {}, ("no_sources",))
    )
    assert decision.level is InterventionLevel.NOTIFY
    assert (
        decision.reason
        == "confidence below silent 0.5, at or above notify 0.3; penalties: no_sources"
    )
    assert decision.recommended_action == "proceed and show the status to the user"


def scores(*values: float) -> list[ConfidenceScore]:
    return [ConfidenceScore(v) for v in values]


@pytest.mark.parametrize("method", ["mean", "min", "weighted", "critical_check"])
def test_aggregate_of_nothing_is_zero(method: str) -> None:
    assert ConfidenceAggregator().aggregate([], method) == 0.0


def test_aggregate_methods() -> None:
    aggregator = ConfidenceAggregator()
    values = scores(0.9, 0.3, 0.6)
    assert aggregator.aggregate(values, "mean") == pytest.approx(0.6)
    assert aggregator.aggregate(values, "min") == 0.3
    assert aggregator.aggregate(values, "weighted") == pytest.approx((0.9 + 2 * 0.3 + 3 * 0.6) / 6)


def test_aggregate_weighted_favours_later_steps() -> None:
    aggregator = ConfidenceAggregator()
    assert aggregator.aggregate(scores(0.0, 1.0), "weighted") > aggregator.aggregate(
        scores(1.0, 0.0), "weighted"
    )


def test_aggregate_method_defaults_to_configuration() -> None:
    assert (
        ConfidenceAggregator(ConfidenceConfig(aggregation="min")).aggregate(scores(0.9, 0.2)) == 0.2
    )


def test_aggregate_unknown_method_names_the_choices() -> None:
    with pytest.raises(ValueError, match="use mean, min, weighted, critical_check"):
        ConfidenceAggregator().aggregate(scores(0.5), "median")
