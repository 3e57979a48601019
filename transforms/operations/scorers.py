"""The five built-in scorers, the registry that names them, and what a batch of cases shares.

Each built-in scorer scores a whole batch at once (`score_frame`) from a `ScoringBatch`, which
computes the shared work (long frames, the simulation, the pattern search) the first time a
scorer asks for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar, Protocol, runtime_checkable

import polars as pl

from transforms.operations.content import content_quality, pattern_errors, pattern_matches
from transforms.operations.hallucination import anti_hallucination
from transforms.operations.matching import operation_accuracy, target_block_precision
from transforms.operations.model import EvalCase
from transforms.operations.prepare import PreparedCases, prepare_cases
from transforms.operations.result import operation_result
from transforms.operations.simulate import Simulation, simulate

__all__ = ["BUILTIN_SCORERS", "BatchScorer", "ScoringBatch", "builtin_scorer"]


class ScoringBatch:
    """A frame of eval cases (CASE_SCHEMA columns) and the work its scorers share."""

    def __init__(self, cases: pl.DataFrame) -> None:
        self.cases = cases

    @cached_property
    def prepared(self) -> PreparedCases:
        """The long frames and the input errors."""
        return prepare_cases(self.cases)

    @cached_property
    def simulation(self) -> Simulation:
        """The actual operations applied to the original blocks."""
        return simulate(self.prepared)

    @cached_property
    def matches(self) -> pl.DataFrame:
        """The pattern search: one row per pattern, found or not, and why a regex is invalid."""
        return pattern_matches(self.prepared, self.simulation)

    @cached_property
    def content(self) -> pl.DataFrame:
        """The content quality frame (shared by the operation result scorer)."""
        return content_quality(self.prepared, self.matches)

    @cached_property
    def errors(self) -> pl.DataFrame:
        """Every input error of the cases: case_idx, section, item, message."""
        return pl.concat([self.prepared.errors, pattern_errors(self.matches)])

    def ready(self, needs: str) -> None:
        """Compute now the shared work that scorers with this `needs` read."""
        if needs == "operations":
            self.prepared  # noqa: B018
        elif needs == "simulation":
            self.simulation  # noqa: B018
        else:
            self.errors  # noqa: B018

    @cached_property
    def eval_cases(self) -> list[EvalCase]:
        """The cases as objects, for custom scorers."""
        return [EvalCase.from_row(row) for row in self.cases.iter_rows(named=True)]


@runtime_checkable
class BatchScorer(Protocol):
    """A scorer that scores every case of a batch at once."""

    name: ClassVar[str]
    default_threshold: ClassVar[float]
    needs: ClassVar[str]
    """What of the batch it reads: `operations`, `simulation` or `patterns` (the search)."""

    def score_frame(self, batch: ScoringBatch) -> pl.DataFrame:
        """case_idx, score in [0, 1] and details (a JSON string), one row per case in order."""
        ...


@dataclass(frozen=True)
class OperationAccuracy:
    """Matched expected operations / expected operations (same type, block, insert position)."""

    name: ClassVar[str] = "operation-accuracy"
    default_threshold: ClassVar[float] = 0.8
    needs: ClassVar[str] = "operations"

    def score_frame(self, batch: ScoringBatch) -> pl.DataFrame:
        """See transforms.operations.matching.operation_accuracy."""
        return operation_accuracy(batch.prepared)


@dataclass(frozen=True)
class TargetBlockPrecision:
    """Correct targets / targets, a target being correct when its block id or index matches."""

    name: ClassVar[str] = "target-block-precision"
    default_threshold: ClassVar[float] = 0.75
    needs: ClassVar[str] = "operations"

    def score_frame(self, batch: ScoringBatch) -> pl.DataFrame:
        """See transforms.operations.matching.target_block_precision."""
        return target_block_precision(batch.prepared)


@dataclass(frozen=True)
class ContentQuality:
    """Expected patterns found in the edited content / expected patterns."""

    name: ClassVar[str] = "content-quality"
    default_threshold: ClassVar[float] = 0.6
    needs: ClassVar[str] = "patterns"

    def score_frame(self, batch: ScoringBatch) -> pl.DataFrame:
        """See transforms.operations.content.content_quality."""
        return batch.content


@dataclass(frozen=True)
class OperationResult:
    """0.6 * share of actual operations that apply + 0.4 * content quality of the result."""

    name: ClassVar[str] = "operation-result"
    default_threshold: ClassVar[float] = 0.8
    needs: ClassVar[str] = "patterns"

    def score_frame(self, batch: ScoringBatch) -> pl.DataFrame:
        """See transforms.operations.result.operation_result."""
        return operation_result(batch.prepared, batch.simulation, batch.content)


@dataclass(frozen=True)
class AntiHallucination:
    """1 when no block was invented, deleted unexpectedly or changed unasked, else 0."""

    name: ClassVar[str] = "anti-hallucination"
    default_threshold: ClassVar[float] = 1.0
    needs: ClassVar[str] = "simulation"

    def score_frame(self, batch: ScoringBatch) -> pl.DataFrame:
        """See transforms.operations.hallucination.anti_hallucination."""
        return anti_hallucination(batch.prepared, batch.simulation)


BUILTIN_SCORERS: dict[str, type[BatchScorer]] = {
    scorer.name: scorer
    for scorer in (
        OperationAccuracy,
        TargetBlockPrecision,
        ContentQuality,
        OperationResult,
        AntiHallucination,
    )
}
"""Built-in scorers by the name a scorer set uses (the seed's names)."""


def builtin_scorer(name: str) -> BatchScorer:
    """The built-in scorer called `name`.

    Raises:
        KeyError: no built-in scorer has that name; the message lists the names that exist.
    """
    try:
        return BUILTIN_SCORERS[name]()
    except KeyError:
        raise KeyError(
            f"unknown scorer '{name}'; the built-in scorers are {', '.join(BUILTIN_SCORERS)}"
        ) from None
