"""The prompts of GRACE's LLM factors (LLMSelfEvaluator, QueryCoverageCalculator) and how a
reply becomes a number; the calls themselves are `pipelines.confidence_llm`'s."""

from __future__ import annotations

import re

__all__ = ["COVERAGE_PROMPT", "ERROR_CHARS", "EVAL_PROMPT", "FALLBACK_SCORE", "parse_score"]

FALLBACK_SCORE = 0.5
"""GRACE's default when the call or the parsing fails."""

EVAL_PROMPT = """Rate the answer below for accuracy, appropriateness and style as one number
between 0.0 (unusable) and 1.0 (fully correct and well put). Reply with the number only.

Question:
{query}

Answer:
{answer}

Sources the answer used:
{sources}
"""

COVERAGE_PROMPT = """List to yourself the distinct points the question asks about, then rate how
many of them the answer covers, as one number between 0.0 (none) and 1.0 (all). Reply with the
number only.

Question:
{query}

Answer:
{answer}
"""

_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)")
ERROR_CHARS = 300
"""Characters of an error or reply kept in a fallback's detail."""


def parse_score(text: str | None) -> float | None:
    """The first number in `text`, clamped to [0, 1]; None when there is none."""
    if not text:
        return None
    match = _NUMBER.search(text)
    if match is None:
        return None
    return min(max(float(match.group()), 0.0), 1.0)
