"""GRACE confidence and intervention levels (SPEC 5): object API, batch expressions, derived mode.

The names are imported on first use, so that a command reading only the levels against outcomes
(`tracegrade confidence --evaluate`, which imports `transforms.confidence.level_agreement`) does not
load the batch expressions and the configuration models as well.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOMES = {
    "FACTOR_SCHEMA": "batch",
    "step_scores": "batch",
    "trace_levels": "batch",
    "ConfidenceAggregator": "calculator",
    "ConfidenceCalculator": "calculator",
    "derived_factors": "derived",
    "factors_from_row": "inputs",
    "search_statistics": "inputs",
    "ActionDecision": "model",
    "ConfidenceFactors": "model",
    "ConfidenceScore": "model",
    "InterventionLevel": "model",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'transforms.confidence' has no attribute {name!r}")
    return getattr(importlib.import_module(f"transforms.confidence.{_HOMES[name]}"), name)
