"""The seed's in-memory entities (FR-006, FR-011, FR-012): one request to evaluate and its
result, and the overall score both entry points compute the same way.

`MetricScore` here is the seed's result entry (metric name, score, comment); a non-LLM metric's
`score()` returns `transforms.judge.metrics.MetricScore` (score, comment), or this one.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from transforms.config.judge import JudgeFile

__all__ = ["EvaluationRequest", "EvaluationResult", "MetricScore", "overall_score"]


def _not_blank(value: str, field: str, fix: str) -> str:
    if not value.strip():
        raise ValueError(f"{field} is empty or whitespace only; {fix}")
    return value


class EvaluationRequest(BaseModel):
    """One query and the submission that answers it, to evaluate with every metric."""

    model_config = ConfigDict(extra="forbid")

    user_query: str
    """The user's request; evaluated as given (not stripped), like the batch judge's texts."""
    submission: str
    """The answer to judge; empty or whitespace-only is refused before any call (FR-013)."""
    team_id: str | None = None
    """Who submitted it; stripped, and not blank when given."""
    execution_id: str | None = None
    """The caller's run identifier; stripped, and not blank when given."""
    round_number: int | None = Field(default=None, ge=1)
    """The caller's round, 1 or more."""
    config: JudgeFile | None = None
    """Replaces the evaluator's configuration for this request."""

    @field_validator("user_query")
    @classmethod
    def _query(cls, value: str) -> str:
        return _not_blank(value, "user_query", "give the query the submission answers")

    @field_validator("submission")
    @classmethod
    def _submission(cls, value: str) -> str:
        return _not_blank(value, "submission", "there is nothing to evaluate")

    @field_validator("team_id", "execution_id")
    @classmethod
    def _identifier(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        return _not_blank(value, str(info.field_name), "omit it or give a value").strip()


class MetricScore(BaseModel):
    """One metric's result: its name, score (rounded to 2 decimals) and the judge's comment."""

    metric_name: str
    """The metric's name as configured (class name, or a `[custom_metrics]` name)."""
    score: float
    """0 to 100 for the built-in metrics."""
    evaluator_comment: str
    """Why the score; stripped."""

    @field_validator("metric_name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _not_blank(value, "metric_name", "name the metric").strip()

    @field_validator("score")
    @classmethod
    def _rounded(cls, value: float) -> float:
        return round(value, 2)

    @field_validator("evaluator_comment")
    @classmethod
    def _comment(cls, value: str) -> str:
        return value.strip()


class EvaluationResult(BaseModel):
    """Every metric's score in configuration order, and the weighted overall score."""

    metrics: list[MetricScore] = Field(min_length=1)
    """The metrics' results, in the configured order (FR-014)."""
    overall_score: float
    """The weighted mean of the metrics' scores, rounded to 2 decimals."""

    @field_validator("overall_score")
    @classmethod
    def _rounded(cls, value: float) -> float:
        return round(value, 2)

    @field_validator("metrics")
    @classmethod
    def _unique(cls, value: list[MetricScore]) -> list[MetricScore]:
        names = [metric.metric_name for metric in value]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(
                f"duplicate metric names: {', '.join(repeated)}; each metric appears once"
            )
        return value


def overall_score(weights: Sequence[float], scores: Sequence[float]) -> float:
    """The weighted mean of `scores` (the weights sum to 1.0 within 0.001, so this is the
    weighted sum up to that tolerance)."""
    total = sum(weights)
    return sum(w * s for w, s in zip(weights, scores, strict=True)) / total
