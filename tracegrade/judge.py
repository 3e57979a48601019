"""LLM-as-a-judge: metrics, configuration and runs (SPEC section 4, docs/judge.md).

Renamed, kept one release under the old name with a DeprecationWarning: `MetricScore` (what a
metric computed without an LLM returns) is `RuleScore`, so that it no longer shares its name
with the evaluator's `tracegrade.evaluator.MetricScore` (one metric's result).
"""

from __future__ import annotations

from typing import Any

from storage.config_files import load_judge_config
from tracegrade._renamed import warn_renamed
from transforms.judge.metrics import (
    BaseMetric,
    ClarityCoherence,
    Coverage,
    LLMJudgeMetric,
    LLMPlain,
    Relevance,
    RuleScore,
)
from transforms.judge.resolve import JudgeConfig

__all__ = [
    "BaseMetric",
    "ClarityCoherence",
    "Coverage",
    "JudgeConfig",
    "LLMJudgeMetric",
    "LLMPlain",
    "Relevance",
    "RuleScore",
    "load_judge_config",
]

_RENAMED = {"MetricScore": "RuleScore"}
"""Old public names and what they are now; the old names go in the next release."""


def __getattr__(name: str) -> Any:
    if name in _RENAMED:
        warn_renamed("tracegrade.judge", name, _RENAMED[name])
        return globals()[_RENAMED[name]]
    raise AttributeError(f"module 'tracegrade.judge' has no attribute {name!r}")
