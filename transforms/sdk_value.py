"""The SDK's `evaluateValue`, ported line by line for one trace at a time.

This is the yardstick, not the product: tests compare the vectorized columns with it, and the
benchmark uses it as the straightforward baseline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from transforms.config.scoring import BUILTIN_PROFILES, ProfileWeights

__all__ = ["reference_value"]


def reference_value(
    steps: Sequence[Mapping[str, Any]],
    task_domain: str | None,
    success: bool,
    confidence: float,
    novelty: float = 0.5,
    profiles: Mapping[str, ProfileWeights] = BUILTIN_PROFILES,
) -> float:
    """evaluateValue for one trace, given its novelty (0.5 without an embedder).

    `steps` are mappings with `type` and `tool_name` (None when the step has no tool).
    """
    unique_types = len({step["type"] for step in steps})
    error_recovery = sum(1 for step in steps if step["type"] == "error_recovery")
    unique_tools = len({step["tool_name"] for step in steps if step["tool_name"] is not None})
    complexity = min(
        1.0,
        (unique_types / 4) * 0.5 + (0.3 if error_recovery > 0 else 0.0) + (len(steps) / 20) * 0.2,
    )
    diversity = min(1.0, (unique_tools / max(1, len(steps))) * 3)
    outcome = confidence * (1.0 if success else 0.3)
    weights = profiles.get(task_domain or "default", profiles["default"])
    score = (
        complexity * weights.complexity
        + novelty * weights.novelty
        + diversity * weights.tool_diversity
        + outcome * weights.outcome_confidence
    )
    if len(steps) == 1 and steps[0]["type"] == "thought":
        score = 0.1
    if error_recovery > 2 and success:
        score = min(1.0, score + 0.1)
    if unique_tools <= 1 and any(step["tool_name"] is not None for step in steps):
        score = max(0.0, score - 0.1)
    return score
