"""ConfidenceCalculator and ConfidenceAggregator, one object at a time (SPEC 5, seed 003).

The batch path (transforms.confidence.batch) applies the same rules as Polars expressions;
tests check that both agree. docs/confidence.md writes the formulas down.
"""

from __future__ import annotations

from collections.abc import Sequence

from transforms.confidence.model import (
    ActionDecision,
    ConfidenceFactors,
    ConfidenceScore,
    InterventionLevel,
)
from transforms.config.confidence import ConfidenceConfig, Thresholds

__all__ = [
    "FACTORS",
    "RECOMMENDED_ACTIONS",
    "ConfidenceAggregator",
    "ConfidenceCalculator",
    "level_reason",
    "search_quality",
    "tool_success",
]

FACTORS = ("search_quality", "tool_success", "source_agreement", "llm_self_eval", "query_coverage")
"""The factors of the non-search weighted mean, in the order they are summed."""

RECOMMENDED_ACTIONS = {
    InterventionLevel.SILENT: "proceed automatically",
    InterventionLevel.NOTIFY: "proceed and show the status to the user",
    InterventionLevel.CONFIRM: "ask the user to confirm before proceeding",
    InterventionLevel.ESCALATE: "stop and hand the task to a human",
}
"""The recommended action of each level."""


def search_quality(
    result_count: int | None, scores: Sequence[float], expected_results: int
) -> float | None:
    """Search quality: volume * relevance; None when the result count is not known.

    volume = min(count, expected_results) / expected_results; relevance = mean of the scores
    clamped to [0, 1], or 1.0 when no scores are given. Zero results give 0.0.
    """
    if result_count is None:
        return None
    if result_count <= 0:
        return 0.0
    volume = min(result_count, expected_results) / expected_results
    if not scores:
        return volume
    relevance = sum(min(max(s, 0.0), 1.0) for s in scores) / len(scores)
    return volume * relevance


def tool_success(calls: int, successes: int) -> float | None:
    """Successes / calls, None when the step made no tool call."""
    return successes / calls if calls > 0 else None


def level_reason(level: InterventionLevel, thresholds: Thresholds, penalties: Sequence[str]) -> str:
    """The reason of a decision: the threshold band it fell in, then the penalties applied."""
    t = thresholds
    band = {
        InterventionLevel.SILENT: f"at or above the silent threshold {t.silent}",
        InterventionLevel.NOTIFY: f"below silent {t.silent}, at or above notify {t.notify}",
        InterventionLevel.CONFIRM: f"below notify {t.notify}, at or above confirm {t.confirm}",
        InterventionLevel.ESCALATE: f"below the confirm threshold {t.confirm}",
    }[level]
    return f"confidence {band}" + (f"; penalties: {', '.join(penalties)}" if penalties else "")


class ConfidenceCalculator:
    """Scores plan steps from their factors and decides the intervention level."""

    def __init__(self, config: ConfidenceConfig | None = None) -> None:
        self.config = config or ConfidenceConfig()

    def calculate(self, factors: ConfidenceFactors) -> ConfidenceScore:
        """The step's confidence: base score, minus the penalties that apply, clamped to [0, 1].

        A search step's base is search_quality * tool_success (an unknown search quality
        counts as 0, an unknown tool success as 1). Any other step's base is the weighted mean
        of the factors present (0.0 when none is).
        """
        c = self.config
        quality = search_quality(
            factors.search_result_count, factors.search_scores, c.expected_results
        )
        success = tool_success(factors.tool_calls, factors.tool_successes)
        values = {
            "search_quality": quality,
            "tool_success": success,
            "source_agreement": factors.source_agreement,
            "llm_self_eval": factors.llm_self_eval,
            "query_coverage": factors.query_coverage,
        }
        weights = dict.fromkeys(FACTORS, 0.0)
        if factors.is_search_step:
            base = (quality if quality is not None else 0.0) * (
                success if success is not None else 1.0
            )
        else:
            w = c.weights
            if quality is not None and quality > 0:
                weights["search_quality"] = w.search_quality
            if success is not None:
                weights["tool_success"] = w.tool_success
            if (
                factors.source_count is not None
                and factors.source_count > 1
                and factors.source_agreement is not None
            ):
                weights["source_agreement"] = w.source_agreement
            if factors.llm_self_eval is not None and factors.llm_self_eval > c.llm_self_eval_floor:
                weights["llm_self_eval"] = w.llm_self_eval
            if factors.query_coverage is not None:
                weights["query_coverage"] = w.query_coverage
            total = 0.0
            weighted = 0.0
            for name in FACTORS:
                if weights[name] > 0:
                    total += weights[name]
                    weighted += weights[name] * (values[name] or 0.0)
            base = weighted / total if total > 0 else 0.0
        applied, penalty = self._penalties(factors)
        breakdown: dict[str, float | None] = dict(values)
        breakdown.update({f"w_{name}": weights[name] for name in FACTORS})
        breakdown.update(base=base, penalty=penalty)
        score = min(max(base - penalty, 0.0), 1.0)
        return ConfidenceScore(score, breakdown, applied)

    def _penalties(self, factors: ConfidenceFactors) -> tuple[tuple[str, ...], float]:
        p = self.config.penalties
        conditions = {
            "zero_search_results": factors.search_result_count == 0,
            "no_sources": factors.source_count == 0,
            "tool_failure": factors.tool_successes < factors.tool_calls,
        }
        applied = tuple(
            name for name, holds in conditions.items() if holds and getattr(p, name) > 0
        )
        total = 0.0
        for name in applied:
            total += getattr(p, name)
        return applied, total

    def decide_action(self, score: ConfidenceScore) -> ActionDecision:
        """SILENT, NOTIFY, CONFIRM or ESCALATE by the configured thresholds (each inclusive)."""
        t = self.config.thresholds
        if score.score >= t.silent:
            level = InterventionLevel.SILENT
        elif score.score >= t.notify:
            level = InterventionLevel.NOTIFY
        elif score.score >= t.confirm:
            level = InterventionLevel.CONFIRM
        else:
            level = InterventionLevel.ESCALATE
        reason = level_reason(level, t, score.penalties_applied)
        return ActionDecision(level, reason, RECOMMENDED_ACTIONS[level])


class ConfidenceAggregator:
    """Combines the step scores of a plan into one confidence."""

    def __init__(self, config: ConfidenceConfig | None = None) -> None:
        self.config = config or ConfidenceConfig()

    def aggregate(self, scores: Sequence[ConfidenceScore], method: str | None = None) -> float:
        """mean, min, or weighted (step k of n weighs k: later steps count more); [] gives 0.0.

        Raises:
            ValueError: `method` is not one of mean, min, weighted.
        """
        method = method or self.config.aggregation
        values = [s.score for s in scores]
        if method not in ("mean", "min", "weighted"):
            raise ValueError(f"aggregation method {method!r} is unknown; use mean, min or weighted")
        if not values:
            return 0.0
        if method == "mean":
            return sum(values) / len(values)
        if method == "min":
            return min(values)
        total = 0.0
        for rank, value in enumerate(values, start=1):
            total += rank * value
        return total / (len(values) * (len(values) + 1) / 2)
