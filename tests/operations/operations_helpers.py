"""Small builders for eval cases and a one-call scorer for the operation scorer tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from storage.config_files import load_scorer_set
from transforms.operations import ScoredCases, score_cases
from transforms.operations.model import CASE_SCHEMA

CASES_FILE = Path(__file__).resolve().parents[1] / "cases" / "operations" / "cases.jsonl"
"""The shipped eval cases whose pass/fail per preset docs/operations.md documents."""

DOC = [
    {"id": "b0", "page": "Guide", "content": "# Checkout"},
    {"id": "b1", "page": "Guide", "content": "Add items to the cart."},
    {"id": "b2", "page": "Guide", "content": "Pay with a card."},
    {"id": "b3", "page": "FAQ", "content": "Refunds take five days."},
]
"""Four blocks on two pages."""


def op(
    kind: str | None, block: str | None = None, content: str | None = None, **more: Any
) -> dict[str, Any]:
    """An operation; `more` takes target_index and position."""
    return {"type": kind, "target_block_id": block, "content": content, **more}


def case(
    expected: list[dict[str, Any]] | None = None,
    actual: list[dict[str, Any]] | None = None,
    patterns: list[dict[str, Any]] | None = None,
    *,
    case_id: str = "c",
    blocks: list[dict[str, Any]] | None = None,
    duration_ms: float | None = None,
) -> dict[str, Any]:
    """An eval case over DOC unless `blocks` is given."""
    return {
        "case_id": case_id,
        "original_blocks": DOC if blocks is None else blocks,
        "expected_operations": expected or [],
        "actual_operations": actual or [],
        "expected_patterns": patterns or [],
        "duration_ms": duration_ms,
    }


def frame(*cases: dict[str, Any]) -> pl.DataFrame:
    """Cases as a CASE_SCHEMA frame."""
    return pl.DataFrame(list(cases), schema=CASE_SCHEMA)


def scored(*cases: dict[str, Any], scorer_set: str = "all") -> ScoredCases:
    """Cases scored with a preset."""
    return score_cases(frame(*cases), load_scorer_set(None, scorer_set).scorer_set)


def result(one: dict[str, Any], scorer: str) -> tuple[float, dict[str, Any]]:
    """Score and parsed details of one scorer for one case (all five scorers run)."""
    rows = scored(one).scores.filter(pl.col("scorer") == scorer)
    ((score, details),) = rows.select("score", "details").rows()
    return score, json.loads(details)


def case_row(one: dict[str, Any], scorer_set: str = "all") -> dict[str, Any]:
    """The case row (weighted_average, passed, failed_scorers, error) of one case."""
    return scored(one, scorer_set=scorer_set).cases.row(0, named=True)
