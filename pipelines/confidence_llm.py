"""The LLM factors of GRACE (seed 003): LLMSelfEvaluator and QueryCoverageCalculator.

The only module of the confidence feature that reaches an LLM, through pydantic-ai's direct
request API. Unlike the judge (SPEC 4), a failed call or an answer without a number gives 0.5,
as GRACE prescribes; the result records that it fell back and why.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl
from pydantic_ai.models import Model

from pipelines.judge.calls import text_reply
from transforms.confidence.prompts import (
    COVERAGE_PROMPT,
    ERROR_CHARS,
    EVAL_PROMPT,
    FALLBACK_SCORE,
    parse_score,
)
from transforms.config.confidence import LLMConfig

__all__ = ["LLMSelfEvaluator", "QueryCoverageCalculator", "llm_factors"]


@dataclass(frozen=True)
class LLMFactor:
    """A factor an LLM gave.

    Attributes:
        score: the value in [0, 1] (FALLBACK_SCORE when `fell_back`).
        fell_back: the call failed or its reply held no number.
        detail: why it fell back (error type and message, or the reply), else None.
    """

    score: float
    fell_back: bool
    detail: str | None = None


class _NumericRater:
    """Sends one prompt, reads one number back."""

    def __init__(self, model: Model | str, config: LLMConfig | None = None) -> None:
        self.model = model
        self.config = config or LLMConfig()

    def _ask(self, prompt: str) -> LLMFactor:
        try:
            # asyncio.run closes its loop; model_request_sync would leave one open per thread
            text = asyncio.run(text_reply(self.model, prompt, timeout_s=self.config.timeout_s))
        except Exception as exc:  # any failure of the call counts as GRACE's fallback
            return LLMFactor(FALLBACK_SCORE, True, f"{type(exc).__name__}: {exc}"[:ERROR_CHARS])
        score = parse_score(text)
        if score is None:
            return LLMFactor(FALLBACK_SCORE, True, f"no number in reply: {text!r}"[:ERROR_CHARS])
        return LLMFactor(score, False)


class LLMSelfEvaluator(_NumericRater):
    """Asks an LLM to rate an answer's accuracy, appropriateness and style.

    Args:
        model: a pydantic-ai model or model name ("openai:gpt-4o-mini").
        config: timeout of a request.
    """

    def assess(self, query: str, answer: str, sources: Sequence[str] | None = None) -> LLMFactor:
        """The rating with its fallback record."""
        listed = "\n".join(f"- {s}" for s in sources) if sources else "(none)"
        return self._ask(EVAL_PROMPT.format(query=query, answer=answer, sources=listed))

    def evaluate(self, query: str, answer: str, sources: Sequence[str] | None = None) -> float:
        """The rating in [0, 1]; 0.5 when the call or the parsing fails."""
        return self.assess(query, answer, sources).score


class QueryCoverageCalculator(_NumericRater):
    """Asks an LLM how much of the question an answer covers.

    Args:
        model: a pydantic-ai model or model name.
        config: timeout of a request.
    """

    def assess(self, query: str, answer: str) -> LLMFactor:
        """The coverage with its fallback record."""
        return self._ask(COVERAGE_PROMPT.format(query=query, answer=answer))

    def calculate(self, query: str, answer: str) -> float:
        """The coverage in [0, 1]; 0.5 when the call or the parsing fails."""
        return self.assess(query, answer).score


def llm_factors(rows: pl.DataFrame, model: Model | str | None, config: LLMConfig) -> pl.DataFrame:
    """Fill missing llm_self_confidence and query_coverage of rows that have a query and an
    answer.

    One request per missing value (an LLM call per row is inherent here). Adds
    llm_self_eval_fallback and query_coverage_fallback: True where the LLM fell back to 0.5,
    False where it answered, None where it was not asked (no model, a given value, or no
    query and answer).
    """
    unasked = {
        "llm_self_eval_fallback": pl.lit(None, pl.Boolean),
        "query_coverage_fallback": pl.lit(None, pl.Boolean),
    }
    if model is None:
        return rows.with_columns(**unasked)
    evaluator, coverage = LLMSelfEvaluator(model, config), QueryCoverageCalculator(model, config)
    columns = ("query", "answer", "source_answers", "llm_self_confidence", "query_coverage")
    evals, eval_fb, covs, cov_fb = [], [], [], []
    for r in rows.select(columns).iter_rows(named=True):
        asked = r["query"] is not None and r["answer"] is not None
        rated = None
        if asked and r["llm_self_confidence"] is None:
            rated = evaluator.assess(r["query"], r["answer"], r["source_answers"])
        covered = None
        if asked and r["query_coverage"] is None:
            covered = coverage.assess(r["query"], r["answer"])
        evals.append(r["llm_self_confidence"] if rated is None else rated.score)
        eval_fb.append(None if rated is None else rated.fell_back)
        covs.append(r["query_coverage"] if covered is None else covered.score)
        cov_fb.append(None if covered is None else covered.fell_back)
    return rows.with_columns(
        llm_self_confidence=pl.Series(evals, dtype=pl.Float64),
        llm_self_eval_fallback=pl.Series(eval_fb, dtype=pl.Boolean),
        query_coverage=pl.Series(covs, dtype=pl.Float64),
        query_coverage_fallback=pl.Series(cov_fb, dtype=pl.Boolean),
    )
