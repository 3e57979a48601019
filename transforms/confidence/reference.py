"""Derived mode one trace at a time, through the object API: the oracle of the batch path.

Tests and bench/bench_confidence.py compare transforms.confidence.derived + batch against it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from transforms.confidence.calculator import (
    ConfidenceAggregator,
    ConfidenceCalculator,
    level_reason,
)
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


def derived_step_factors(
    steps: Sequence[Mapping[str, Any]], confidence: float, pattern: re.Pattern[str]
) -> list[ConfidenceFactors]:
    """The plan steps derived mode reads off one trace (each tool call, then the answer)."""
    out = []
    calls = successes = searches = hits = 0
    for index, step in enumerate(steps):
        if step["type"] != "tool_call":
            continue
        following = steps[index + 1]["type"] if index + 1 < len(steps) else None
        ok = 0 if following == "error_recovery" else 1
        name = step.get("tool_name")
        search = name is not None and pattern.search(name) is not None
        calls += 1
        successes += ok
        searches += search
        hits += ok if search else 0
        out.append(
            ConfidenceFactors(
                is_search_step=search,
                search_result_count=ok if search else None,
                tool_calls=1,
                tool_successes=ok,
            )
        )
    out.append(
        ConfidenceFactors(
            search_result_count=hits if searches else None,
            tool_calls=calls,
            tool_successes=successes,
            source_count=successes,
            llm_self_eval=confidence,
        )
    )
    return out


def reference_trace_confidence(
    steps: Sequence[Mapping[str, Any]], confidence: float, config: ConfidenceConfig
) -> TraceConfidence:
    """Derived mode for one trace: factors, step scores, aggregate and decision."""
    calculator = ConfidenceCalculator(config)
    pattern = re.compile(config.search_tool_pattern)
    scores = [calculator.calculate(f) for f in derived_step_factors(steps, confidence, pattern)]
    aggregate = ConfidenceAggregator(config).aggregate(scores)
    penalties = sorted({name for score in scores for name in score.penalties_applied})
    decision = calculator.decide_action(ConfidenceScore(aggregate, {}, tuple(penalties)))
    reason = level_reason(decision.level, config.thresholds, penalties)
    return TraceConfidence(scores, aggregate, decision.level, reason, decision.recommended_action)
