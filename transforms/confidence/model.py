"""GRACE's data types (seed 003): factors in, a score with its breakdown out, a level to act on."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

__all__ = ["ActionDecision", "ConfidenceFactors", "ConfidenceScore", "InterventionLevel"]


@dataclass(frozen=True)
class ConfidenceFactors:
    """The raw evidence of one plan step; None (or an empty list) means "not known".

    Attributes:
        is_search_step: the step searched (its base is search_quality * tool_success).
        search_result_count: results the search returned.
        search_scores: relevance scores of those results, each in [0, 1].
        tool_calls: tool calls the step made.
        tool_successes: of those, the ones that succeeded.
        source_count: sources the step's answer drew on.
        source_agreement: agreement of the sources' answers in [0, 1]
            (SourceAgreementCalculator).
        llm_self_eval: an LLM's evaluation of the answer in [0, 1] (LLMSelfEvaluator).
        query_coverage: how much of the query the answer covers in [0, 1]
            (QueryCoverageCalculator).
    """

    is_search_step: bool = False
    search_result_count: int | None = None
    search_scores: tuple[float, ...] = ()
    tool_calls: int = 0
    tool_successes: int = 0
    source_count: int | None = None
    source_agreement: float | None = None
    llm_self_eval: float | None = None
    query_coverage: float | None = None


@dataclass(frozen=True)
class ConfidenceScore:
    """A step's (or an aggregate's) confidence.

    Attributes:
        score: the confidence in [0, 1].
        breakdown: sub-scores and weights that made it (`search_quality`, `tool_success`, ...,
            `w_<factor>`, `base`, `penalty`).
        penalties_applied: names of the penalties subtracted, in configuration order.
    """

    score: float
    breakdown: dict[str, float | None] = field(default_factory=dict)
    penalties_applied: tuple[str, ...] = ()


class InterventionLevel(StrEnum):
    """How much a human needs to look, from none to a hand-over."""

    SILENT = "SILENT"
    NOTIFY = "NOTIFY"
    CONFIRM = "CONFIRM"
    ESCALATE = "ESCALATE"


@dataclass(frozen=True)
class ActionDecision:
    """What to do about a score.

    Attributes:
        level: the intervention level.
        reason: which threshold placed it there, and the penalties behind it.
        recommended_action: what an operator or the agent should do next.
    """

    level: InterventionLevel
    reason: str
    recommended_action: str
