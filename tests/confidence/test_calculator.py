"""ConfidenceCalculator.calculate, decide_action and ConfidenceAggregator: every branch of seed 003."""

from __future__ import annotations

import pytest

from transforms.confidence import (
    ConfidenceAggregator,
    ConfidenceCalculator,
    ConfidenceFactors,
    ConfidenceScore,
    InterventionLevel,
)
from transforms.confidence.calculator import search_quality, tool_success
from transforms.config.confidence import ConfidenceConfig, Penalties, Thresholds

NO_PENALTIES = ConfidenceConfig(
    penalties=Penalties(zero_search_results=0, no_sources=0, tool_failure=0)
)


def calc(factors: ConfidenceFactors, config: ConfidenceConfig = NO_PENALTIES) -> ConfidenceScore:
    return ConfidenceCalculator(config).calculate(factors)


def test_search_quality_from_count_and_scores() -> None:
    assert search_quality(None, (), 1) is None
    assert search_quality(0, (0.9,), 1) == 0.0
    assert search_quality(4, (), 1) == 1.0
    assert search_quality(1, (), 4) == 0.25
    assert search_quality(2, (0.5, 1.0), 4) == pytest.approx(0.5 * 0.75)
    assert search_quality(3, (1.7, -0.2), 3) == pytest.approx(0.5)


def test_tool_success_is_absent_without_calls() -> None:
    assert tool_success(0, 0) is None
    assert tool_success(4, 3) == 0.75


def test_search_step_multiplies_quality_by_tool_success() -> None:
    result = calc(
        ConfidenceFactors(
            is_search_step=True,
            search_result_count=2,
            search_scores=(0.8,),
            tool_calls=4,
            tool_successes=3,
        )
    )
    assert result.score == pytest.approx(0.8 * 0.75)
    assert result.breakdown["base"] == pytest.approx(0.6)
    assert all(result.breakdown[f"w_{n}"] == 0.0 for n in ("search_quality", "tool_success"))


def test_search_step_without_tool_calls_keeps_its_quality() -> None:
    assert calc(
        ConfidenceFactors(is_search_step=True, search_result_count=1, search_scores=(0.7,))
    ).score == pytest.approx(0.7)


def test_search_step_with_unknown_result_count_scores_zero() -> None:
    assert calc(ConfidenceFactors(is_search_step=True, tool_calls=1, tool_successes=1)).score == 0.0


def test_search_step_ignores_other_factors() -> None:
    result = calc(
        ConfidenceFactors(
            is_search_step=True, search_result_count=1, llm_self_eval=0.1, query_coverage=0.0
        )
    )
    assert result.score == 1.0


def test_non_search_step_with_every_factor_present() -> None:
    factors = ConfidenceFactors(
        search_result_count=1,
        search_scores=(0.5,),
        tool_calls=2,
        tool_successes=1,
        source_count=3,
        source_agreement=0.9,
        llm_self_eval=0.8,
        query_coverage=0.4,
    )
    expected = (0.6 * 0.5 + 0.4 * 0.5 + 0.2 * 0.9 + 0.3 * 0.8 + 0.2 * 0.4) / (
        0.6 + 0.4 + 0.2 + 0.3 + 0.2
    )
    result = calc(factors)
    assert result.score == pytest.approx(expected)
    assert result.breakdown["w_query_coverage"] == 0.2


def test_search_quality_zero_is_left_out_of_the_mean() -> None:
    result = calc(ConfidenceFactors(search_result_count=0, tool_calls=1, tool_successes=1))
    assert result.breakdown["w_search_quality"] == 0.0
    assert result.score == 1.0


def test_search_quality_absent_is_left_out() -> None:
    result = calc(ConfidenceFactors(tool_calls=2, tool_successes=1))
    assert result.breakdown["search_quality"] is None
    assert result.score == 0.5


def test_tool_success_absent_without_calls() -> None:
    result = calc(ConfidenceFactors(search_result_count=1, search_scores=(0.3,)))
    assert result.breakdown["w_tool_success"] == 0.0
    assert result.score == pytest.approx(0.3)


@pytest.mark.parametrize(("sources", "counted"), [(None, False), (0, False), (1, False), (2, True)])
def test_source_agreement_counts_only_with_more_than_one_source(
    sources: int | None, counted: bool
) -> None:
    result = calc(
        ConfidenceFactors(
            tool_calls=1, tool_successes=1, source_count=sources, source_agreement=0.0
        )
    )
    assert result.breakdown["w_source_agreement"] == (0.2 if counted else 0.0)
    assert result.score == pytest.approx(0.4 / 0.6 if counted else 1.0)


def test_source_agreement_without_a_value_is_left_out() -> None:
    result = calc(ConfidenceFactors(tool_calls=1, tool_successes=1, source_count=3))
    assert result.breakdown["w_source_agreement"] == 0.0


@pytest.mark.parametrize(
    ("value", "counted"), [(None, False), (0.2, False), (0.6, False), (0.61, True), (1.0, True)]
)
def test_llm_self_eval_counts_only_above_the_floor(value: float | None, counted: bool) -> None:
    result = calc(ConfidenceFactors(tool_calls=2, tool_successes=1, llm_self_eval=value))
    assert result.breakdown["w_llm_self_eval"] == (0.3 if counted else 0.0)
    expected = (0.4 * 0.5 + 0.3 * value) / 0.7 if counted and value is not None else 0.5
    assert result.score == pytest.approx(expected)


def test_query_coverage_weight_is_configurable() -> None:
    config = NO_PENALTIES.model_copy(
        update={"weights": NO_PENALTIES.weights.model_copy(update={"query_coverage": 1.0})}
    )
    result = calc(ConfidenceFactors(tool_calls=1, tool_successes=1, query_coverage=0.0), config)
    assert result.score == pytest.approx(0.4 / 1.4)
    assert (
        calc(ConfidenceFactors(tool_calls=1, tool_successes=1)).breakdown["w_query_coverage"] == 0.0
    )


def test_no_factor_present_gives_zero() -> None:
    result = calc(ConfidenceFactors(llm_self_eval=0.5))
    assert result.score == 0.0
    assert result.breakdown["base"] == 0.0


def test_zero_search_results_penalty() -> None:
    result = calc(
        ConfidenceFactors(search_result_count=0, tool_calls=1, tool_successes=1), ConfidenceConfig()
    )
    assert result.penalties_applied == ("zero_search_results",)
    assert result.score == pytest.approx(0.7)


def test_no_sources_penalty() -> None:
    result = calc(
        ConfidenceFactors(tool_calls=1, tool_successes=1, source_count=0), ConfidenceConfig()
    )
    assert result.penalties_applied == ("no_sources",)
    assert result.score == pytest.approx(0.8)


def test_tool_failure_penalty() -> None:
    result = calc(ConfidenceFactors(tool_calls=2, tool_successes=1), ConfidenceConfig())
    assert result.penalties_applied == ("tool_failure",)
    assert result.score == pytest.approx(0.4)
    assert result.breakdown["penalty"] == pytest.approx(0.1)


def test_penalty_of_zero_is_not_applied() -> None:
    config = ConfidenceConfig(penalties=Penalties(no_sources=0.0))
    assert (
        calc(
            ConfidenceFactors(tool_calls=1, tool_successes=1, source_count=0), config
        ).penalties_applied
        == ()
    )


def test_penalties_stack_and_clamp_at_zero() -> None:
    factors = ConfidenceFactors(
        is_search_step=True, search_result_count=0, tool_calls=1, tool_successes=0, source_count=0
    )
    result = calc(factors, ConfidenceConfig())
    assert result.penalties_applied == ("zero_search_results", "no_sources", "tool_failure")
    assert result.breakdown["penalty"] == pytest.approx(0.6)
    assert result.score == 0.0


def test_score_clamps_at_one() -> None:
    result = calc(
        ConfidenceFactors(is_search_step=True, search_result_count=1, search_scores=(3.0,))
    )
    assert result.score == 1.0


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


@pytest.mark.parametrize("method", ["mean", "min", "weighted"])
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
    with pytest.raises(ValueError, match="use mean, min or weighted"):
        ConfidenceAggregator().aggregate(scores(0.5), "median")
