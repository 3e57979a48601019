"""GRACE's data types (seed 003): factors in, a score with its breakdown out, a level to act on.

`ConfidenceFactors` has the field names, order and defaults of the original's dataclass
(nakashima2toshio/gemini_grace_agent, grace/confidence.py at ceb06343), so a GRACE agent's
recorded factors mean the same here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum

__all__ = [
    "FACTOR_DEFAULTS",
    "ActionDecision",
    "ConfidenceFactors",
    "ConfidenceScore",
    "InterventionLevel",
]


@dataclass(frozen=True)
class ConfidenceFactors:
    """The evidence of one plan step, as GRACE's ConfidenceFactors; a field not given takes the
    original's default. Values are not checked (the original does not check them either); the
    factors table reader quarantines rows out of range before they reach the calculator.

    Attributes:
        search_result_count: results the search returned.
        search_avg_score: mean relevance score of those results.
        search_max_score: best relevance score.
        search_score_variance: population variance of the scores (default 1.0, not 0).
        source_agreement: agreement of the sources' answers (SourceAgreementCalculator).
        source_count: sources the step drew on.
        llm_self_confidence: an LLM's evaluation of the answer (LLMSelfEvaluator).
        tool_success_rate: success rate of the step's tools, used when no execution is counted
            and for the `tool_failures` penalty.
        tool_execution_count: tools executed.
        tool_success_count: of those, the ones that succeeded.
        query_coverage: how much of the query the answer covers (QueryCoverageCalculator).
        is_search_step: the step searched (its base is search quality, times tool success).
    """

    search_result_count: int = 0
    search_avg_score: float = 0.0
    search_max_score: float = 0.0
    search_score_variance: float = 1.0
    source_agreement: float = 0.0
    source_count: int = 0
    llm_self_confidence: float = 0.5
    tool_success_rate: float = 1.0
    tool_execution_count: int = 0
    tool_success_count: int = 0
    query_coverage: float = 0.0
    is_search_step: bool = False


FACTOR_DEFAULTS: dict[str, int | float | bool] = asdict(ConfidenceFactors())
"""Each factor's default, in the original's field order."""


@dataclass(frozen=True)
class ConfidenceScore:
    """A step's (or an aggregate's) confidence.

    Attributes:
        score: the confidence: clamped to [0, 1] and rounded to `score_decimals` (3) places
            for a step; the aggregate as computed for a trace.
        breakdown: the original's five sub-scores (`search_quality`, `source_agreement`,
            `llm_self_eval`, `tool_success`, `query_coverage`, unrounded; a search step shows 0
            for the last two), then tracegrade's `w_<factor>` (the weight each factor had in a
            non-search step's mean, 0 when left out) and `base` (the score before penalties).
        penalties_applied: the penalties applied, in the order they were applied.
    """

    score: float
    breakdown: dict[str, float] = field(default_factory=dict)
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
