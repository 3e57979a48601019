"""LLM-as-a-judge: metrics, configuration and runs (SPEC section 4, docs/judge.md)."""

from __future__ import annotations

from tracegrade.judge.config import JudgeConfig, load_judge_config
from tracegrade.judge.metrics import (
    BaseMetric,
    ClarityCoherence,
    Coverage,
    LLMJudgeMetric,
    LLMPlain,
    MetricScore,
    Relevance,
)

__all__ = [
    "BaseMetric",
    "ClarityCoherence",
    "Coverage",
    "JudgeConfig",
    "LLMJudgeMetric",
    "LLMPlain",
    "MetricScore",
    "Relevance",
    "load_judge_config",
]
