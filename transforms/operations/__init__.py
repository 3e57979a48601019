"""Block-edit operation scorers (SPEC section 6): eval cases in, scores and details out."""

from transforms.operations.custom import CaseScorer, ResponseTimeScorer
from transforms.operations.model import CASE_SCHEMA, EvalCase
from transforms.operations.scorers import BUILTIN_SCORERS, builtin_scorer
from transforms.operations.scoring import ScoredCases, ScorerSet, ScorerSpec, score_cases

__all__ = [
    "BUILTIN_SCORERS",
    "CASE_SCHEMA",
    "CaseScorer",
    "EvalCase",
    "ResponseTimeScorer",
    "ScoredCases",
    "ScorerSet",
    "ScorerSpec",
    "builtin_scorer",
    "score_cases",
]
