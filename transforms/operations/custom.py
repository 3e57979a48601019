"""Custom scorers: the interface, how they run per case, and the seed's response-time example.

A custom scorer is any class with `score(actual, expected)` returning a float in [0, 1] and
`details(actual, expected)` returning a JSON-serialisable mapping. It is named in a scorer set
as "module:Class" with its constructor's keyword arguments as `options`. A scorer that raises,
or returns a score outside [0, 1], fails that case with an input error naming it; the run goes
on.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import polars as pl

from transforms.operations.model import ActualOutput, EvalCase, ExpectedOutput

__all__ = ["CaseScorer", "ResponseTimeScorer", "custom_scores"]


@runtime_checkable
class CaseScorer(Protocol):
    """What a custom scorer implements."""

    def score(self, actual: ActualOutput, expected: ExpectedOutput) -> float:
        """The case's score in [0, 1]."""
        ...

    def details(self, actual: ActualOutput, expected: ExpectedOutput) -> Mapping[str, Any]:
        """Why the case scored what it did (stored as JSON)."""
        ...


@dataclass(frozen=True)
class ResponseTimeScorer:
    """1 within `max_acceptable_ms`, then down linearly to 0 at twice that (seed 002).

    Attributes:
        max_acceptable_ms: the slowest response that still scores 1.
    """

    max_acceptable_ms: float = 5000.0

    def __post_init__(self) -> None:
        if not self.max_acceptable_ms > 0:
            raise ValueError(f"max_acceptable_ms must be positive, got {self.max_acceptable_ms}")

    def _duration(self, actual: ActualOutput) -> float:
        if actual.duration_ms is None:
            raise ValueError("the case has no duration_ms; record the workflow's response time")
        return actual.duration_ms

    def score(self, actual: ActualOutput, expected: ExpectedOutput) -> float:
        """1 when on time, else max(0, 1 - (duration - max) / max)."""
        duration = self._duration(actual)
        if duration <= self.max_acceptable_ms:
            return 1.0
        return max(0.0, 1.0 - (duration - self.max_acceptable_ms) / self.max_acceptable_ms)

    def details(self, actual: ActualOutput, expected: ExpectedOutput) -> dict[str, Any]:
        """The duration, the limit, and whether the duration is within it."""
        duration = self._duration(actual)
        return {
            "responseTimeMs": duration,
            "maxAcceptableMs": self.max_acceptable_ms,
            "passed": duration <= self.max_acceptable_ms,
        }


def _one(scorer: CaseScorer, case: EvalCase) -> tuple[float, str, str | None]:
    actual, expected = case.actual, case.expected
    try:
        value = scorer.score(actual, expected)
        details = json.dumps(dict(scorer.details(actual, expected)), ensure_ascii=False)
    except Exception as exc:
        return (
            0.0,
            json.dumps({"error": f"{type(exc).__name__}: {exc}"}),
            (f"{type(exc).__name__}: {exc}"),
        )
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not (math.isfinite(value) and 0.0 <= value <= 1.0)
    ):
        problem = f"returned {value!r}, expected a number in [0, 1]"
        return 0.0, json.dumps({"error": problem}), problem
    return float(value), details, None


def custom_scores(scorer: CaseScorer, name: str, cases: Sequence[EvalCase]) -> pl.DataFrame:
    """case_idx, score, details (JSON) and error, calling the scorer once per case."""
    rows = [_one(scorer, case) for case in cases]
    scores, details, errors = zip(*rows, strict=True) if rows else ((), (), ())
    return pl.DataFrame(
        {
            "case_idx": pl.Series(range(len(rows)), dtype=pl.UInt32),
            "score": pl.Series(scores, dtype=pl.Float64),
            "details": pl.Series(details, dtype=pl.String),
            "error": pl.Series(
                [None if error is None else f"scorer '{name}' failed: {error}" for error in errors],
                dtype=pl.String,
            ),
        }
    )
