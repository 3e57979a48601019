"""The value score against the SDK's formulas, branch by branch."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from transforms.config.scoring import BUILTIN_PROFILES, FACTORS, ProfileWeights, ScoringConfig
from transforms.sdk_value import reference_value
from transforms.value import value_features, value_score

STEP = pl.Struct({"type": pl.String, "tool_name": pl.String})


def step(kind: str, tool: str | None = None) -> dict[str, Any]:
    return {"type": kind, "tool_name": tool}


def score_rows(
    rows: list[dict[str, Any]], novelty: float = 0.5, **profiles: ProfileWeights
) -> pl.DataFrame:
    frame = pl.DataFrame(
        rows,
        schema={
            "steps": pl.List(STEP),
            "task_domain": pl.String,
            "success": pl.Boolean,
            "confidence": pl.Float64,
        },
    )
    all_profiles = ScoringConfig(profiles=profiles).all_profiles()
    features = value_features(frame.lazy(), all_profiles).with_columns(novelty=pl.lit(novelty))
    return value_score(features, 0.75).collect()


def row(
    steps: list[dict[str, Any]],
    domain: str | None = "default",
    success: bool | None = True,
    confidence: float = 0.8,
) -> dict[str, Any]:
    return {"steps": steps, "task_domain": domain, "success": success, "confidence": confidence}


def one(steps: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
    return score_rows([row(steps, **kwargs)]).row(0, named=True)


SEED_STEPS = [
    step("thought"),
    step("tool_call", "github_pr_read"),
    step("observation"),
    step("tool_call", "static_analysis"),
    step("observation"),
]


def test_seed_example_scores_exactly_0_66875() -> None:
    result = one(SEED_STEPS, domain="code-review", confidence=0.95)
    assert result["profile"] == "default"
    assert result["complexity"] == 0.425
    assert result["tool_diversity"] == 1.0
    assert result["outcome_confidence"] == 0.95
    assert result["score"] == pytest.approx(0.66875, abs=1e-15)
    assert result["overrides"] == []
    assert result["shareable"] is False


def test_single_thought_step_scores_0_1() -> None:
    result = one([step("thought")], confidence=1.0)
    assert result["score"] == 0.1
    assert result["overrides"] == ["single_thought"]


def test_single_non_thought_step_is_not_overridden() -> None:
    result = one([step("observation")])
    assert result["overrides"] == []
    assert result["score"] != 0.1


@pytest.mark.parametrize("success", [True, False])
def test_two_error_recoveries_get_no_bonus(success: bool) -> None:
    steps = [step("thought"), step("error_recovery"), step("error_recovery")]
    result = one(steps, success=success)
    assert "error_recovery_bonus" not in result["overrides"]
    assert result["complexity"] == pytest.approx(min(1, 2 / 4 * 0.5 + 0.3 + 3 / 20 * 0.2))


def test_three_error_recoveries_with_success_get_the_bonus() -> None:
    steps = [step("thought"), *[step("error_recovery")] * 3]
    result = one(steps, success=True)
    base = reference_value(steps, "default", True, 0.8) - 0.1
    assert result["overrides"] == ["error_recovery_bonus"]
    assert result["score"] == pytest.approx(base + 0.1, abs=1e-15)


def test_three_error_recoveries_without_success_get_no_bonus() -> None:
    steps = [step("thought"), *[step("error_recovery")] * 3]
    result = one(steps, success=False)
    assert result["overrides"] == []
    assert result["outcome_confidence"] == pytest.approx(0.8 * 0.3)


@pytest.mark.parametrize("recoveries", [0, 3])
def test_an_unknown_outcome_scores_as_the_sdk_scores_a_falsy_success(recoveries: int) -> None:
    """SPEC 1: a null success (no outcome recorded) is `success ? 1.0 : 0.3` in the SDK, so the
    score, its factors and its overrides are those of success false, bit for bit."""
    steps = [step("thought"), *[step("error_recovery")] * recoveries, step("tool_call", "a")]
    unknown, failed = one(steps, success=None), one(steps, success=False)
    assert (unknown.pop("success"), failed.pop("success")) == (None, False)
    assert unknown == failed
    assert unknown["score"] == reference_value(steps, "default", False, 0.8)


def test_bonus_is_capped_at_one() -> None:
    steps = [
        step("thought"),
        *[step("error_recovery")] * 3,
        step("tool_call", "a"),
        step("tool_call", "b"),
        step("observation"),
    ]
    result = score_rows([row(steps, confidence=1.0)], novelty=1.0).row(0, named=True)
    assert result["score"] <= 1.0
    assert result["score"] == reference_value(steps, "default", True, 1.0, novelty=1.0)


def test_one_tool_used_twice_is_penalised() -> None:
    steps = [step("tool_call", "search"), step("observation"), step("tool_call", "search")]
    result = one(steps)
    assert result["overrides"] == ["low_tool_diversity"]
    assert result["tool_diversity"] == 1.0
    assert result["score"] == reference_value(steps, "default", True, 0.8)


def test_no_tools_no_penalty() -> None:
    result = one([step("thought"), step("observation")])
    assert result["overrides"] == []
    assert result["tool_diversity"] == 0.0


def test_tool_on_a_non_tool_call_step_counts() -> None:
    steps = [step("thought", "calculator"), step("observation")]
    result = one(steps)
    assert result["overrides"] == ["low_tool_diversity"]
    assert result["tool_diversity"] == 1.0


def test_single_thought_with_a_tool_gets_rule_one_then_rule_three() -> None:
    result = one([step("thought", "calculator")])
    assert result["overrides"] == ["single_thought", "low_tool_diversity"]
    assert result["score"] == pytest.approx(0.0, abs=1e-15)


def test_zero_steps() -> None:
    result = one([], confidence=0.6)
    assert result["n_steps"] == 0
    assert result["complexity"] == 0.0
    assert result["tool_diversity"] == 0.0
    assert result["overrides"] == []
    assert result["score"] == pytest.approx(0.5 * 0.35 + 0.6 * 0.25)


def test_complexity_saturates_at_one() -> None:
    steps = [step(kind) for kind in ("thought", "tool_call", "observation", "error_recovery")] * 10
    assert one(steps)["complexity"] == 1.0


@pytest.mark.parametrize(
    ("domain", "profile"),
    [
        ("finance", "finance"),
        ("Finance", "default"),
        ("code-review", "default"),
        ("made-up", "default"),
        (None, "default"),
        ("medical", "medical"),
        ("code", "code"),
        ("customer_service", "customer_service"),
    ],
)
def test_profile_is_an_exact_case_sensitive_match(domain: str | None, profile: str) -> None:
    result = one(SEED_STEPS, domain=domain)
    assert result["profile"] == profile
    weights = BUILTIN_PROFILES[profile]
    assert tuple(result[f"w_{factor}"] for factor in FACTORS) == weights.as_tuple()


@pytest.mark.parametrize("confidence", [0.0, 1.0])
@pytest.mark.parametrize("success", [True, False])
def test_confidence_bounds(confidence: float, success: bool) -> None:
    result = one(SEED_STEPS, confidence=confidence, success=success)
    assert result["outcome_confidence"] == confidence * (1.0 if success else 0.3)


def test_configured_profile_is_used_and_can_override_a_builtin() -> None:
    legal = ProfileWeights(complexity=0.1, novelty=0.1, tool_diversity=0.1, outcome_confidence=0.7)
    finance = ProfileWeights(
        complexity=0.25, novelty=0.25, tool_diversity=0.25, outcome_confidence=0.25
    )
    frame = score_rows(
        [row(SEED_STEPS, domain="legal"), row(SEED_STEPS, domain="finance")],
        legal=legal,
        finance=finance,
    )
    assert frame["profile"].to_list() == ["legal", "finance"]
    assert frame["w_outcome_confidence"].to_list() == [0.7, 0.25]


def test_shareable_at_the_threshold() -> None:
    frame = pl.DataFrame(
        {
            "steps": [[step("thought"), step("observation")]],
            "task_domain": ["default"],
            "success": [True],
            "confidence": [1.0],
        },
        schema={
            "steps": pl.List(STEP),
            "task_domain": pl.String,
            "success": pl.Boolean,
            "confidence": pl.Float64,
        },
    )
    features = value_features(frame.lazy(), BUILTIN_PROFILES).with_columns(novelty=pl.lit(1.0))
    score = value_score(features, 0.0).collect()["score"][0]
    assert value_score(features, score).collect()["shareable"][0] is True
    assert value_score(features, score + 1e-12).collect()["shareable"][0] is False


def test_vectorized_equals_the_reference_port_bit_for_bit() -> None:
    import random

    rng = random.Random(7)
    kinds = ["thought", "tool_call", "observation", "error_recovery"]
    domains = ["finance", "code", "medical", "customer_service", "default", "Finance", None]
    rows = []
    for _ in range(3000):
        steps = [
            step(rng.choice(kinds), rng.choice([None, None, "a", "b", "c", "d"]))
            for _ in range(rng.choice([0, 1, 1, 2, 3, 5, 8, 13, 21, 30]))
        ]
        rows.append(
            row(
                steps,
                domain=rng.choice(domains),
                success=rng.random() < 0.7,
                confidence=rng.choice([0.0, 1.0, rng.random()]),
            )
        )
    novelty = 0.37
    frame = score_rows(rows, novelty=novelty)
    expected = [
        reference_value(r["steps"], r["task_domain"], r["success"], r["confidence"], novelty)
        for r in rows
    ]
    assert frame["score"].to_list() == expected
