"""LLM-as-a-judge: metrics, configuration and runs (SPEC section 4, docs/judge.md)."""

from __future__ import annotations

from storage.config_files import load_judge_config
from transforms.judge.metrics import (
    BaseMetric,
    ClarityCoherence,
    Coverage,
    LLMJudgeMetric,
    LLMPlain,
    MetricScore,
    Relevance,
)
from transforms.judge.resolve import JudgeConfig

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
