"""Derived mode one trace at a time, through the object API: the oracle of the batch path.

Tests and bench/bench_confidence.py compare transforms.confidence.derived + batch against it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from transforms.confidence.calculator import (
    ConfidenceAggregator,
    ConfidenceCalculator,
    critical_note,
    level_reason,
)
from transforms.confidence.derived import RELEVANCE, SOURCE_AGREEMENT
from transforms.confidence.model import ConfidenceFactors, ConfidenceScore, InterventionLevel
from transforms.config.confidence import ConfidenceConfig

__all__ = ["TraceConfidence", "derived_step_factors", "reference_trace_confidence"]


@dataclass(frozen=True)
class TraceConfidence:
    """One trace's result: step scores, aggregate, level, reason, action."""

    steps: list[ConfidenceScore]
    aggregate: float
    level: InterventionLevel
    reason: str
    recommended_action: str


def _search_results(results: int) -> dict[str, Any]:
    """`results` results of relevance 1 (the original tool's statistics of such scores)."""
    found = results > 0
    return {
        "search_result_count": results,
        "search_avg_score": RELEVANCE if found else 0.0,
        "search_max_score": RELEVANCE if found else 0.0,
        "search_score_variance": 0.0 if found else 1.0,
    }


def derived_step_factors(
    steps: Sequence[Mapping[str, Any]], confidence: float | None, pattern: re.Pattern[str]
) -> list[ConfidenceFactors]:
    """The plan steps derived mode reads off one trace (each tool call, then the answer)."""
    out = []
    calls = successes = hits = 0
    for index, step in enumerate(steps):
        if step["type"] != "tool_call":
            continue
        following = steps[index + 1]["type"] if index + 1 < len(steps) else None
        ok = 0 if following == "error_recovery" else 1
        name = step.get("tool_name")
        search = name is not None and pattern.search(name) is not None
        calls += 1
        successes += ok
        hits += ok if search else 0
        out.append(
            ConfidenceFactors(
                **_search_results(ok if search else 0),
                source_agreement=SOURCE_AGREEMENT,
                tool_success_rate=float(ok),
                tool_execution_count=1,
                tool_success_count=ok,
                is_search_step=search,
            )
        )
    answer = ConfidenceFactors(
        **_search_results(hits),
        source_agreement=SOURCE_AGREEMENT,
        source_count=successes,
        tool_success_rate=successes / calls if calls > 0 else 1.0,
        tool_execution_count=calls,
        tool_success_count=successes,
    )
    if confidence is not None:
        answer = replace(answer, llm_self_confidence=confidence)
    return [*out, answer]


def reference_trace_confidence(
    steps: Sequence[Mapping[str, Any]], confidence: float | None, config: ConfidenceConfig
) -> TraceConfidence:
    """Derived mode for one trace: factors, step scores, aggregate and decision."""
    calculator = ConfidenceCalculator(config)
    aggregator = ConfidenceAggregator(config)
    pattern = re.compile(config.search_tool_pattern)
    scores = [calculator.calculate(f) for f in derived_step_factors(steps, confidence, pattern)]
    aggregate = aggregator.aggregate(scores)
    critical = (
        config.aggregation == "critical_check"
        and (aggregator.aggregate_with_critical_check(scores)[1])
    )
    penalties = sorted({name for score in scores for name in score.penalties_applied})
    decision = calculator.decide_action(ConfidenceScore(aggregate, {}, tuple(penalties)))
    note = critical_note(config) if critical else ""
    reason = level_reason(decision.level, config.thresholds, penalties, note)
    return TraceConfidence(scores, aggregate, decision.level, reason, decision.recommended_action)
