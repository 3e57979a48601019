"""ConfidenceCalculator and ConfidenceAggregator, one object at a time (SPEC 5, seed 003).

They compute what GRACE's own calculator computes (nakashima2toshio/gemini_grace_agent,
grace/confidence.py at ceb06343): the same operations in the same order, so the same doubles.
The batch path (transforms.confidence.batch) applies the same rules as Polars expressions;
tests check both against hand-worked cases and against each other. docs/confidence.md writes
the formulas down, with the one departure: a score within LEVEL_TOLERANCE of a threshold
counts as reaching it.
"""

from __future__ import annotations

from collections.abc import Sequence

from transforms.confidence.model import (
    ActionDecision,
    ConfidenceFactors,
    ConfidenceScore,
    InterventionLevel,
)
from transforms.config.confidence import AGGREGATION_METHODS, ConfidenceConfig, Thresholds

__all__ = [
    "FACTORS",
    "LEVEL_TOLERANCE",
    "RECOMMENDED_ACTIONS",
    "ConfidenceAggregator",
    "ConfidenceCalculator",
    "critical_note",
    "level_reason",
    "search_quality",
    "tool_success",
]

FACTORS = ("search_quality", "tool_success", "source_agreement", "llm_self_eval", "query_coverage")
"""The factors of the non-search weighted mean, in the order the original sums them."""

LEVEL_TOLERANCE = 1e-12
"""The departure from the original: a score this close below a threshold reaches it, so that
weighted [0.7, 0.7] (0.6999999999999998 in floating point) is NOTIFY, not CONFIRM."""

RECOMMENDED_ACTIONS = {
    InterventionLevel.SILENT: "proceed automatically",
    InterventionLevel.NOTIFY: "proceed and show the status to the user",
    InterventionLevel.CONFIRM: "ask the user to confirm before proceeding",
    InterventionLevel.ESCALATE: "stop and hand the task to a human",
}
"""The recommended action of each level."""


def search_quality(factors: ConfidenceFactors, config: ConfidenceConfig) -> float:
    """The original's `_calc_search_quality`: 0 with no results and no best score; the best
    score when it reaches `max_alone_from`; else the max/mean blend less the variance penalty,
    floored at 0 (not capped at 1: the final clamp does that)."""
    q = config.search_quality
    if factors.search_result_count == 0 and factors.search_max_score == 0:
        return 0.0
    if factors.search_max_score >= q.max_alone_from:
        return factors.search_max_score
    combined = (factors.search_max_score * q.max_weight) + (factors.search_avg_score * q.avg_weight)
    variance_penalty = min(q.variance_cap, factors.search_score_variance * q.variance_weight)
    return max(0.0, combined - variance_penalty)


def tool_success(factors: ConfidenceFactors) -> float:
    """The original's `_calc_tool_success`: successes / executions, or the given rate when no
    execution is counted."""
    if factors.tool_execution_count == 0:
        return factors.tool_success_rate
    return factors.tool_success_count / factors.tool_execution_count


def tool_failures_name(rate: float) -> str:
    """The penalty's name as the original writes it, the rate with two decimals."""
    return f"tool_failures(rate={rate:.2f})"


def level_reason(
    level: InterventionLevel,
    thresholds: Thresholds,
    penalties: Sequence[str],
    critical: str = "",
) -> str:
    """The reason of a decision: the threshold band it fell in, the penalties applied, and the
    critical failure note of `critical_check` aggregation."""
    t = thresholds
    band = {
        InterventionLevel.SILENT: f"at or above the silent threshold {t.silent}",
        InterventionLevel.NOTIFY: f"below silent {t.silent}, at or above notify {t.notify}",
        InterventionLevel.CONFIRM: f"below notify {t.notify}, at or above confirm {t.confirm}",
        InterventionLevel.ESCALATE: f"below the confirm threshold {t.confirm}",
    }[level]
    listed = f"; penalties: {', '.join(map(_readable, penalties))}" if penalties else ""
    return f"confidence {band}{listed}{critical}"


def _readable(penalty: str) -> str:
    """A penalty as the reason names it. The original's `tool_failures(rate=R)` carries the
    tool *success* rate R, which reads as a failure rate; the `penalties` column keeps the
    original's name, the reason says what R is."""
    prefix = "tool_failures(rate="
    if penalty.startswith(prefix) and penalty.endswith(")"):
        return f"tool_failures (tool calls succeeded at rate {penalty[len(prefix) : -1]})"
    return penalty


def critical_note(config: ConfidenceConfig) -> str:
    """What the reason adds when `critical_check` aggregation found a critical failure."""
    c = config.critical_check
    return f"; a step scored below the critical threshold {c.threshold} (x{c.multiplier})"


class ConfidenceCalculator:
    """Scores plan steps from their factors and decides the intervention level."""

    def __init__(self, config: ConfidenceConfig | None = None) -> None:
        self.config = config or ConfidenceConfig()

    def calculate(self, factors: ConfidenceFactors) -> ConfidenceScore:
        """The original's `calculate`: a base score, the penalty multipliers applied in turn,
        clamped to [0, 1] and rounded (Python's round) to `score_decimals`."""
        quality = search_quality(factors, self.config)
        success = tool_success(factors)
        breakdown = {
            "search_quality": quality,
            "source_agreement": factors.source_agreement,
            "llm_self_eval": factors.llm_self_confidence,
            "tool_success": success,
            "query_coverage": factors.query_coverage,
        }
        included = dict.fromkeys(FACTORS, False)
        if factors.is_search_step:
            base = quality
            if success < 1.0:
                base *= success
            breakdown["llm_self_eval"] = 0.0
            breakdown["query_coverage"] = 0.0
        else:
            included = self._included(factors, quality)
            weighted_sum = 0.0
            total = 0.0
            for name in FACTORS:
                if included[name]:
                    weight = getattr(self.config.weights, name)
                    weighted_sum += breakdown[name] * weight
                    total += weight
            base = weighted_sum / total if total > 0 else 0.0
        penalized, applied = self._penalties(base, factors)
        score = round(min(1.0, max(0.0, penalized)), self.config.score_decimals)
        w = self.config.weights
        breakdown.update(
            {f"w_{n}": getattr(w, n) if included[n] else 0.0 for n in FACTORS}, base=base
        )
        return ConfidenceScore(score, breakdown, applied)

    def _included(self, factors: ConfidenceFactors, quality: float) -> dict[str, bool]:
        """Which factors join a non-search step's mean (tool success always does)."""
        c = self.config
        return {
            "search_quality": quality > c.search_quality_floor,
            "tool_success": True,
            "source_agreement": factors.source_count > c.source_count_floor,
            "llm_self_eval": factors.llm_self_confidence > c.llm_self_eval_floor,
            "query_coverage": factors.query_coverage > c.query_coverage_floor,
        }

    def _penalties(self, score: float, factors: ConfidenceFactors) -> tuple[float, tuple[str, ...]]:
        """The original's `_apply_penalties`: each multiplier in turn, each name recorded."""
        p = self.config.penalties
        applied = []
        if factors.is_search_step and factors.search_result_count == 0:
            score *= p.no_search_results
            applied.append("no_search_results")
        if factors.tool_success_rate < 1.0:
            multiplier = p.tool_failures_base + p.tool_failures_per_rate * factors.tool_success_rate
            score *= multiplier
            applied.append(tool_failures_name(factors.tool_success_rate))
        if factors.source_count == 0:
            exempt = (factors.is_search_step and factors.search_result_count > 0) or (
                not factors.is_search_step
                and factors.llm_self_confidence >= p.no_sources_exempt_from
            )
            if not exempt:
                score *= p.no_sources
                applied.append("no_sources")
        return score, tuple(applied)

    def decide_action(self, score: ConfidenceScore) -> ActionDecision:
        """SILENT, NOTIFY, CONFIRM or ESCALATE by the configured thresholds, each inclusive
        (within LEVEL_TOLERANCE)."""
        level = level_of(score.score, self.config.thresholds)
        reason = level_reason(level, self.config.thresholds, score.penalties_applied)
        return ActionDecision(level, reason, RECOMMENDED_ACTIONS[level])


def level_of(score: float, thresholds: Thresholds) -> InterventionLevel:
    """The level of a score: the first threshold it reaches, within LEVEL_TOLERANCE."""
    if score >= thresholds.silent - LEVEL_TOLERANCE:
        return InterventionLevel.SILENT
    if score >= thresholds.notify - LEVEL_TOLERANCE:
        return InterventionLevel.NOTIFY
    if score >= thresholds.confirm - LEVEL_TOLERANCE:
        return InterventionLevel.CONFIRM
    return InterventionLevel.ESCALATE


def _plain_sum(values: Sequence[float]) -> float:
    """Left-to-right float sum: CPython 3.11's sum() (3.12 compensates, which differs by ulps)."""
    total = 0.0
    for value in values:
        total += value
    return total


class ConfidenceAggregator:
    """Combines the step scores of a plan into one confidence."""

    def __init__(self, config: ConfidenceConfig | None = None) -> None:
        self.config = config or ConfidenceConfig()

    def aggregate(self, scores: Sequence[ConfidenceScore], method: str | None = None) -> float:
        """mean, min, weighted (step k of n weighs k: later steps count more) or
        critical_check (`aggregate_with_critical_check`'s score); [] gives 0.0 whatever the
        method, as in the original.

        Raises:
            ValueError: `method` is not one of AGGREGATION_METHODS.
        """
        method = method or self.config.aggregation
        if not scores:
            return 0.0
        values = [s.score for s in scores]
        if method == "mean":
            return _plain_sum(values) / len(values)
        if method == "min":
            return min(values)
        if method == "weighted":
            ranks = range(1, len(values) + 1)
            return _plain_sum([v * k for v, k in zip(values, ranks, strict=True)]) / sum(ranks)
        if method == "critical_check":
            return self.aggregate_with_critical_check(scores)[0]
        raise ValueError(
            f"aggregation method {method!r} is unknown; use {', '.join(AGGREGATION_METHODS)}"
        )

    def aggregate_with_critical_check(
        self, scores: Sequence[ConfidenceScore], critical_threshold: float | None = None
    ) -> tuple[float, bool]:
        """The mean, times the critical multiplier (0.7) when a step scores strictly below the
        critical threshold (0.3 unless given); and whether one did. [] gives (0.0, False)."""
        check = self.config.critical_check
        threshold = check.threshold if critical_threshold is None else critical_threshold
        if not scores:
            return 0.0, False
        values = [s.score for s in scores]
        critical = any(v < threshold for v in values)
        mean = _plain_sum(values) / len(values)
        return (mean * check.multiplier, True) if critical else (mean, False)
