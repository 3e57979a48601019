"""A scorer set applied to a batch of eval cases: scores, pass/fail per threshold, averages."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import polars as pl

from transforms.operations._json import CASE
from transforms.operations.custom import CaseScorer, custom_scores
from transforms.operations.scorers import BuiltinScorer, ScoringBatch

__all__ = ["ScoredCases", "ScorerSet", "ScorerSpec", "score_cases"]

PASS_TOLERANCE = 1e-9
"""A score passes when score >= threshold - PASS_TOLERANCE (0.7 * 3 / 3 is not below 0.7)."""

_CUSTOM_SECTION = 3


@dataclass(frozen=True)
class ScorerSpec:
    """One scorer of a set: the name its rows carry, the scorer, its weight and threshold."""

    name: str
    scorer: BuiltinScorer | CaseScorer
    weight: float
    threshold: float


@dataclass(frozen=True)
class ScorerSet:
    """Scorers applied together; a case passes when every one meets its threshold."""

    name: str
    scorers: tuple[ScorerSpec, ...]

    @property
    def total_weight(self) -> float:
        """Sum of the weights, in set order."""
        return sum(spec.weight for spec in self.scorers)


@dataclass(frozen=True)
class ScoredCases:
    """The results of a batch, rows in input order.

    Attributes:
        cases: case_id, weighted_average, passed, failed_scorers (names, in set order), error
            (the case's input errors joined with "; ", null when none).
        scores: case_id, scorer, score, threshold, passed, weight, details (JSON), one row per
            case and scorer: the rows of the first scorer, then those of the second, and so on.
    """

    cases: pl.DataFrame
    scores: pl.DataFrame


def _divide(numerator: pl.Expr, denominator: float) -> pl.Expr:
    """numerator / denominator correctly rounded (Polars divides by a scalar as a multiply)."""
    return numerator / (numerator * 0.0 + denominator)


def _frame(spec: ScorerSpec, batch: ScoringBatch) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    if isinstance(spec.scorer, BuiltinScorer):
        return spec.scorer.score_frame(batch), None
    assert isinstance(spec.scorer, CaseScorer)
    frame = custom_scores(spec.scorer, spec.name, batch.eval_cases)
    errors = frame.filter(pl.col("error").is_not_null()).select(
        CASE,
        section=pl.lit(_CUSTOM_SECTION, dtype=pl.Int64),
        item=pl.lit(0, dtype=pl.Int64),
        message=pl.col("error"),
    )
    return frame.drop("error"), errors


def _frames(
    scorers: tuple[ScorerSpec, ...], batch: ScoringBatch
) -> list[tuple[pl.DataFrame, pl.DataFrame | None]]:
    """Every scorer's frame, in set order.

    Most of the work is single-threaded, so built-in scorers run on a second thread as soon as
    what they read is ready (the long frames, then the simulation), while this thread computes
    the simulation and the pattern search and runs the scorers built on the search. Shared
    work is computed before a scorer that reads it is submitted, so nothing runs twice.
    """

    def needing(what: str) -> list[int]:
        return [
            number
            for number, spec in enumerate(scorers)
            if isinstance(spec.scorer, BuiltinScorer) and spec.scorer.needs == what
        ]

    batch.ready("operations")
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = {n: pool.submit(_frame, scorers[n], batch) for n in needing("operations")}
        batch.ready("simulation")
        pending |= {n: pool.submit(_frame, scorers[n], batch) for n in needing("simulation")}
        batch.ready("patterns")
        done = {n: _frame(spec, batch) for n, spec in enumerate(scorers) if n not in pending}
        done |= {number: future.result() for number, future in pending.items()}
    return [done[number] for number in range(len(scorers))]


def _score_rows(frame: pl.DataFrame, spec: ScorerSpec, passed: pl.Series) -> pl.DataFrame:
    """One scorer's rows of the long scores frame, still keyed by case_idx."""
    return frame.select(
        CASE,
        scorer=pl.lit(spec.name),
        score="score",
        threshold=pl.lit(spec.threshold, dtype=pl.Float64),
        passed=passed,
        weight=pl.lit(spec.weight, dtype=pl.Float64),
        details="details",
    )


def _case_errors(
    input_errors: pl.DataFrame, frames: list[tuple[pl.DataFrame, pl.DataFrame | None]]
) -> pl.DataFrame:
    """case_idx and error: each case's input and custom-scorer errors joined with "; ".

    Errors are ordered by section, then item; a custom scorer's errors carry its set order as
    item.
    """
    error_frames = [input_errors]
    for order, (_, errors) in enumerate(frames):
        if errors is not None:
            error_frames.append(errors.with_columns(item=pl.lit(order, dtype=pl.Int64)))
    return (
        pl.concat(error_frames)
        .sort([CASE, "section", "item"], maintain_order=True)
        .group_by(CASE, maintain_order=True)
        .agg(error=pl.col("message").str.join("; "))
    )


def _case_rows(
    summary: pl.DataFrame,
    wide: dict[str, pl.Series],
    errors: pl.DataFrame,
    long: pl.DataFrame,
    scorer_set: ScorerSet,
) -> pl.DataFrame:
    """The `cases` frame of ScoredCases, from each scorer's weighted term and pass flag."""
    count = len(scorer_set.scorers)
    weighted = pl.col("_term0")
    for order in range(1, count):
        weighted = weighted + pl.col(f"_term{order}")
    failed = (
        long.filter(~pl.col("passed"))
        .group_by(CASE, maintain_order=True)
        .agg(failed_scorers="scorer")
    )
    return (
        summary.with_columns(**wide)
        .join(errors, on=CASE, how="left", maintain_order="left")
        .join(failed, on=CASE, how="left", maintain_order="left")
        .select(
            "case_id",
            weighted_average=_divide(weighted, scorer_set.total_weight),
            passed=pl.all_horizontal(f"_passed{order}" for order in range(count))
            & pl.col("error").is_null(),
            failed_scorers=pl.col("failed_scorers").fill_null(pl.lit([], dtype=pl.List(pl.String))),
            error="error",
        )
    )


def score_cases(cases: pl.DataFrame, scorer_set: ScorerSet) -> ScoredCases:
    """Score a frame of eval cases (CASE_SCHEMA columns) with every scorer of the set.

    A case passes when each score meets its threshold and the case has no input error; the
    weighted average is sum(score * weight) / sum(weight), summed in set order.
    """
    batch = ScoringBatch(cases)
    summary = batch.prepared.cases.select(CASE, "case_id")
    frames = _frames(scorer_set.scorers, batch)
    long_frames: list[pl.DataFrame] = []
    wide: dict[str, pl.Series] = {}
    for order, (spec, (frame, _)) in enumerate(zip(scorer_set.scorers, frames, strict=True)):
        passed = frame["score"] >= spec.threshold - PASS_TOLERANCE
        wide[f"_term{order}"] = frame["score"] * spec.weight
        wide[f"_passed{order}"] = passed
        long_frames.append(_score_rows(frame, spec, passed))
    long = pl.concat(long_frames)
    case_rows = _case_rows(summary, wide, _case_errors(batch.errors, frames), long, scorer_set)
    scores = long.select(
        pl.concat([summary["case_id"]] * len(scorer_set.scorers)).alias("case_id"),
        "scorer",
        "score",
        "threshold",
        "passed",
        "weight",
        "details",
    )
    return ScoredCases(case_rows, scores)
