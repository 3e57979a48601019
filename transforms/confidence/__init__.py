"""GRACE confidence and intervention levels (SPEC 5): object API, batch expressions, derived mode."""

from transforms.confidence.batch import FACTOR_SCHEMA, step_scores, trace_levels
from transforms.confidence.calculator import ConfidenceAggregator, ConfidenceCalculator
from transforms.confidence.derived import derived_factors
from transforms.confidence.inputs import factors_from_row, search_statistics
from transforms.confidence.model import (
    ActionDecision,
    ConfidenceFactors,
    ConfidenceScore,
    InterventionLevel,
)

__all__ = [
    "FACTOR_SCHEMA",
    "ActionDecision",
    "ConfidenceAggregator",
    "ConfidenceCalculator",
    "ConfidenceFactors",
    "ConfidenceScore",
    "InterventionLevel",
    "derived_factors",
    "factors_from_row",
    "search_statistics",
    "step_scores",
    "trace_levels",
]
