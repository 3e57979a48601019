"""Eval cases of block-edit workflows: the input schema and the objects custom scorers receive.

An eval case holds the original blocks of a document, the operations the model should produce
(`expected_operations`), the operations it did produce (`actual_operations`), and regular
expressions the edited content must contain (`expected_patterns`). docs/operations.md is the
contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

__all__ = [
    "CASE_SCHEMA",
    "DEFAULT_POSITION",
    "OPERATION_TYPES",
    "POSITIONS",
    "ActualOutput",
    "Block",
    "EvalCase",
    "ExpectedOutput",
    "Operation",
    "Pattern",
]

OPERATION_TYPES = ("insert", "update", "replace", "delete")
"""The operation types a block edit may have."""

POSITIONS = ("before", "after")
"""Where an insert puts its new block relative to its target block."""

DEFAULT_POSITION = "after"
"""The position of an insert that gives none."""

BLOCK_DTYPE = pl.Struct({"id": pl.String, "page": pl.String, "content": pl.String})
OPERATION_DTYPE = pl.Struct(
    {
        "type": pl.String,
        "target_block_id": pl.String,
        "target_index": pl.Int64,
        "position": pl.String,
        "content": pl.String,
    }
)
PATTERN_DTYPE = pl.Struct({"pattern": pl.String, "page": pl.String, "case_insensitive": pl.Boolean})

CASE_SCHEMA = pl.Schema(
    [
        ("case_id", pl.String()),
        ("original_blocks", pl.List(BLOCK_DTYPE)),
        ("expected_operations", pl.List(OPERATION_DTYPE)),
        ("actual_operations", pl.List(OPERATION_DTYPE)),
        ("expected_patterns", pl.List(PATTERN_DTYPE)),
        ("duration_ms", pl.Float64()),
    ]
)
"""Columns of a frame of eval cases (JSONL keys and Parquet columns have the same names)."""


@dataclass(frozen=True, slots=True)
class Block:
    """One block of the original document."""

    id: str | None
    page: str | None
    content: str


@dataclass(frozen=True, slots=True)
class Operation:
    """One block edit, as the eval author expects it or as the model produced it."""

    type: str | None
    target_block_id: str | None = None
    target_index: int | None = None
    position: str | None = None
    content: str | None = None


@dataclass(frozen=True, slots=True)
class Pattern:
    """A regular expression the edited content of one page (or of every page) must contain."""

    pattern: str | None
    page: str | None = None
    case_insensitive: bool = False


@dataclass(frozen=True, slots=True)
class ActualOutput:
    """What the workflow under test produced for one case."""

    case_id: str
    operations: tuple[Operation, ...]
    duration_ms: float | None = None


@dataclass(frozen=True, slots=True)
class ExpectedOutput:
    """What the eval author expects for one case, with the document it starts from."""

    case_id: str
    original_blocks: tuple[Block, ...]
    operations: tuple[Operation, ...]
    patterns: tuple[Pattern, ...]


def _operations(items: list[Mapping[str, Any]] | None) -> tuple[Operation, ...]:
    return tuple(
        Operation(
            type=item.get("type"),
            target_block_id=item.get("target_block_id"),
            target_index=item.get("target_index"),
            position=item.get("position"),
            content=item.get("content"),
        )
        for item in items or ()
    )


@dataclass(frozen=True, slots=True)
class EvalCase:
    """One eval case; `from_row` reads a row of a CASE_SCHEMA frame or a parsed JSONL line."""

    case_id: str
    original_blocks: tuple[Block, ...] = ()
    expected_operations: tuple[Operation, ...] = ()
    actual_operations: tuple[Operation, ...] = ()
    expected_patterns: tuple[Pattern, ...] = ()
    duration_ms: float | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> EvalCase:
        """Build a case from a mapping with the CASE_SCHEMA keys (missing lists are empty)."""
        blocks = tuple(
            Block(item.get("id"), item.get("page"), item.get("content") or "")
            for item in row.get("original_blocks") or ()
        )
        patterns = tuple(
            Pattern(item.get("pattern"), item.get("page"), bool(item.get("case_insensitive")))
            for item in row.get("expected_patterns") or ()
        )
        duration = row.get("duration_ms")
        return cls(
            case_id=str(row["case_id"]),
            original_blocks=blocks,
            expected_operations=_operations(row.get("expected_operations")),
            actual_operations=_operations(row.get("actual_operations")),
            expected_patterns=patterns,
            duration_ms=None if duration is None else float(duration),
        )

    @property
    def actual(self) -> ActualOutput:
        """The `actual` argument of a custom scorer."""
        return ActualOutput(self.case_id, self.actual_operations, self.duration_ms)

    @property
    def expected(self) -> ExpectedOutput:
        """The `expected` argument of a custom scorer."""
        return ExpectedOutput(
            self.case_id, self.original_blocks, self.expected_operations, self.expected_patterns
        )
