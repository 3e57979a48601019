"""Factors-table conveniences folded into GRACE's fields, row by row and as a frame."""

from __future__ import annotations

from typing import Any

import polars as pl

from storage.confidence.factors import FACTORS_INPUT_SCHEMA
from transforms.confidence import ConfidenceFactors, factors_from_row, search_statistics
from transforms.confidence.inputs import original_factor_columns


def test_search_statistics_are_the_original_tools() -> None:
    # RAGSearchTool._calculate_confidence_factors: mean = 1.32/3 = .44; population variance
    # ((.14)^2 + (-.03)^2 + (-.11)^2)/3 = .0326/3 = .010866666666666663 in floating point.
    assert search_statistics([0.58, 0.41, 0.33]) == (3, 0.44, 0.58, 0.010866666666666663)
    assert search_statistics([0.7]) == (1, 0.7, 0.7, 0.0)  # one score: variance 0.0
    assert search_statistics([]) == (0, 0.0, 0.0, 1.0)  # the empty branch: the defaults


ROWS: list[dict[str, Any]] = [
    {"search_scores": [0.9, 0.7], "search_result_count": 3, "is_search_step": True},
    {"search_scores": [0.58, 0.41, 0.33], "tool_calls": 2, "tool_successes": 1},
    {"tool_execution_count": 4, "tool_success_count": 4, "tool_success_rate": 0.75},
    {"llm_self_eval": 0.9, "source_answers": ["a", "b", "c"]},
    {"llm_self_confidence": 0.2, "source_answers": ["a"], "source_count": 5},
    {"search_avg_score": 0.4, "search_max_score": 0.5, "search_score_variance": 0.01},
    {},
]


def test_conveniences_fill_the_original_fields() -> None:
    # search_scores [.9, .7]: mean .8, best .9, variance .010000000000000005; the given count 3
    # is kept (a search may return more results than it scores).
    assert factors_from_row(ROWS[0]) == ConfidenceFactors(
        search_result_count=3,
        search_avg_score=0.8,
        search_max_score=0.9,
        search_score_variance=0.010000000000000005,
        is_search_step=True,
    )
    # tool_calls / tool_successes are the counts; the rate keeps its default 1.0.
    assert factors_from_row(ROWS[1]).tool_execution_count == 2
    assert factors_from_row(ROWS[1]).tool_success_count == 1
    assert factors_from_row(ROWS[1]).tool_success_rate == 1.0
    assert factors_from_row(ROWS[1]).search_result_count == 3
    # llm_self_eval is llm_self_confidence; source_answers give the count unless it is given.
    assert factors_from_row(ROWS[3]).llm_self_confidence == 0.9
    assert factors_from_row(ROWS[3]).source_count == 3
    assert factors_from_row(ROWS[4]).source_count == 5
    assert factors_from_row({}) == ConfidenceFactors()


def test_the_frame_folds_as_the_rows_do() -> None:
    rows = [{"trace_id": "t", "step_index": i, **row} for i, row in enumerate(ROWS)]
    frame = original_factor_columns(pl.DataFrame(rows, schema=FACTORS_INPUT_SCHEMA))
    assert "search_scores" not in frame.columns and "tool_calls" not in frame.columns
    for got, row in zip(frame.iter_rows(named=True), ROWS, strict=True):
        given = {k: v for k, v in got.items() if k in ConfidenceFactors.__dataclass_fields__}
        kept = {k: v for k, v in given.items() if v is not None}
        assert ConfidenceFactors(**kept) == factors_from_row(row)
