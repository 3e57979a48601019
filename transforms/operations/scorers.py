"""The five built-in scorers, the registry that names them, and what a batch of cases shares.

Each built-in scorer scores a whole batch at once (`score_frame`) from a `ScoringBatch`, which
computes the shared work (long frames, the simulation, the pattern search) the first time a
scorer asks for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import polars as pl

from transforms.operations.content import content_quality, pattern_errors, pattern_matches
from transforms.operations.hallucination import anti_hallucination
from transforms.operations.matching import operation_accuracy, target_block_precision
from transforms.operations.model import EvalCase
from transforms.operations.prepare import PreparedCases, prepare_cases
from transforms.operations.result import operation_result
from transforms.operations.simulate import Simulation, simulate

__all__ = ["BUILTIN_SCORERS", "BuiltinScorer", "ScoringBatch", "builtin_scorer"]


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


@dataclass(frozen=True)
class BuiltinScorer:
    """A built-in scorer, which scores every case of a batch at once: its name (the seed's),
    the threshold the seed gives it, what of the batch it reads, and the batch function."""

    name: str
    default_threshold: float
    needs: str
    """What of the batch it reads: `operations`, `simulation` or `patterns` (the search)."""
    score: Callable[[ScoringBatch], pl.DataFrame]

    def score_frame(self, batch: ScoringBatch) -> pl.DataFrame:
        """case_idx, score in [0, 1] and details (a JSON string), one row per case in order."""
        return self.score(batch)


BUILTIN_SCORERS: dict[str, BuiltinScorer] = {
    scorer.name: scorer
    for scorer in (
        # matched expected operations / expected operations (same type, block, insert position)
        BuiltinScorer(
            "operation-accuracy", 0.8, "operations", lambda b: operation_accuracy(b.prepared)
        ),
        # correct targets / targets, a target correct when its block id or index matches
        BuiltinScorer(
            "target-block-precision",
            0.75,
            "operations",
            lambda b: target_block_precision(b.prepared),
        ),
        # expected patterns found in the edited content / expected patterns
        BuiltinScorer("content-quality", 0.6, "patterns", lambda b: b.content),
        # 0.6 * share of actual operations that apply + 0.4 * content quality of the result
        BuiltinScorer(
            "operation-result",
            0.8,
            "patterns",
            lambda b: operation_result(b.prepared, b.simulation, b.content),
        ),
        # 1 when no block was invented, deleted unexpectedly or changed unasked, else 0
        BuiltinScorer(
            "anti-hallucination",
            1.0,
            "simulation",
            lambda b: anti_hallucination(b.prepared, b.simulation),
        ),
    )
}
"""Built-in scorers by the name a scorer set uses (the seed's names)."""


def builtin_scorer(name: str) -> BuiltinScorer:
    """The built-in scorer called `name`.

    Raises:
        KeyError: no built-in scorer has that name; the message lists the names that exist.
    """
    try:
        return BUILTIN_SCORERS[name]
    except KeyError:
        raise KeyError(
            f"unknown scorer '{name}'; the built-in scorers are {', '.join(BUILTIN_SCORERS)}"
        ) from None
