"""Factors-table inputs: GRACE's own field names, and today's conveniences mapped onto them.

A factors row may give the original's ConfidenceFactors fields directly. The conveniences fill
them the way the original's own tools do (grace/tools.py and grace/executor.py at ceb06343):

| convenience | fills | how |
|---|---|---|
| `search_scores` | search_result_count, search_avg_score, search_max_score, search_score_variance | RAGSearchTool._calculate_confidence_factors: count, mean, best, population variance (0.0 for one score; an empty list gives the defaults) |
| `tool_calls`, `tool_successes` | tool_execution_count, tool_success_count | the same numbers |
| `llm_self_eval` | llm_self_confidence | the same number |
| `source_answers` | source_count, source_agreement | their number; their agreement through the embedder (pipelines) |

A convenience that is another name for a field (tool_calls, tool_successes, llm_self_eval, and
search_scores for the mean, best and variance) conflicts with that field: a row giving both is
quarantined (CONFLICTS). A convenience that is evidence for a field (search_scores for the
count, source_answers for the count and agreement, query and answer for the LLM factors) gives
way to the field when both are given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from transforms.confidence.model import FACTOR_DEFAULTS, ConfidenceFactors

__all__ = [
    "ALIASES",
    "CONFLICTS",
    "factors_from_row",
    "original_factor_columns",
    "search_statistics",
]

ALIASES = {
    "tool_calls": "tool_execution_count",
    "tool_successes": "tool_success_count",
    "llm_self_eval": "llm_self_confidence",
}
"""Convenience column -> the original field it names."""

CONFLICTS: tuple[tuple[str, str], ...] = (
    *ALIASES.items(),
    ("search_scores", "search_avg_score"),
    ("search_scores", "search_max_score"),
    ("search_scores", "search_score_variance"),
)
"""(convenience, field) pairs a row may not both give."""

SearchStatistics = tuple[int, float, float, float]
"""search_result_count, search_avg_score, search_max_score, search_score_variance."""


def search_statistics(scores: Sequence[float]) -> SearchStatistics:
    """The original RAG tool's statistics of its result scores: count, mean, best and the
    population variance (0.0 for a single score); an empty list gives the factor defaults.

    Sums run left to right, as CPython 3.11's sum() does.
    """
    if not scores:
        return 0, 0.0, 0.0, 1.0
    total = 0.0
    for score in scores:
        total += score
    mean = total / len(scores)
    variance = 0.0
    if len(scores) > 1:
        squares = 0.0
        for score in scores:
            squares += (score - mean) ** 2
        variance = squares / len(scores)
    return len(scores), mean, max(scores), variance


def factors_from_row(row: Mapping[str, Any]) -> ConfidenceFactors:
    """One factors row (original fields and conveniences; None = not given) as the
    ConfidenceFactors the calculator scores. Source agreement must already be filled from
    source_answers where it is computed; conflicts must already be quarantined."""
    values = {name: row.get(name) for name in FACTOR_DEFAULTS}
    for convenience, field in ALIASES.items():
        if values[field] is None:
            values[field] = row.get(convenience)
    scores = row.get("search_scores")
    if scores is not None:
        count, mean, best, variance = search_statistics(scores)
        if values["search_result_count"] is None:
            values["search_result_count"] = count
        values.update(search_avg_score=mean, search_max_score=best, search_score_variance=variance)
    answers = row.get("source_answers")
    if values["source_count"] is None and answers is not None:
        values["source_count"] = len(answers)
    given = {name: value for name, value in values.items() if value is not None}
    return ConfidenceFactors(**given)


def original_factor_columns(rows: pl.DataFrame) -> pl.DataFrame:
    """`rows` with the conveniences folded into the original's fields (as factors_from_row
    does, row for row); the convenience columns other than source_answers are dropped.

    Search statistics are computed in Python, per row, with search_statistics, so that they are
    the doubles the original's tool would compute.
    """
    stats = [
        None if scores is None else search_statistics(scores)
        for scores in rows["search_scores"].to_list()
    ]
    computed = pl.DataFrame(
        [(None, None, None, None) if s is None else s for s in stats],
        schema={
            "_count": pl.Int64,
            "_mean": pl.Float64,
            "_best": pl.Float64,
            "_variance": pl.Float64,
        },
        orient="row",
    )
    return (
        pl.concat([rows, computed], how="horizontal")
        .with_columns(
            **{field: pl.coalesce(field, convenience) for convenience, field in ALIASES.items()},
            search_result_count=pl.coalesce("search_result_count", "_count"),
            search_avg_score=pl.coalesce("search_avg_score", "_mean"),
            search_max_score=pl.coalesce("search_max_score", "_best"),
            search_score_variance=pl.coalesce("search_score_variance", "_variance"),
            source_count=pl.coalesce("source_count", pl.col("source_answers").list.len()),
        )
        .drop("_count", "_mean", "_best", "_variance", "search_scores", *ALIASES)
    )
