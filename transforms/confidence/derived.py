"""Derived mode: confidence factors read off the trace export itself, no extra input, no LLM.

Rules (docs/confidence.md):
- every tool_call step is a plan step; it is a search step when its tool name matches
  `search_tool_pattern`; it failed when the step right after it is an error_recovery step;
  tool_calls = 1, tool_successes = 0 if it failed else 1; a search step reports
  search_result_count = 0 if it failed else 1 (no relevance scores);
- every trace ends with one `answer` step (non-search): tool_calls and tool_successes summed
  over the trace, search_result_count = successful searches (None when the trace never
  searched), source_count = successful tool calls, llm_self_eval = outcome.confidence.
"""

from __future__ import annotations

import polars as pl

from transforms.confidence.batch import FACTOR_SCHEMA

__all__ = ["DERIVED_COLUMNS", "STEP_KINDS", "derived_factors"]

STEP_KINDS = ("tool_call", "answer", "factors")
"""`step_kind` of a plan step: a derived tool call, a derived answer, or a factors-table row."""

DERIVED_COLUMNS = {**FACTOR_SCHEMA, "step_kind": pl.String(), "source_step_id": pl.Int64()}
"""FACTOR_SCHEMA plus where the step came from (the trace step's step_id for tool calls)."""

_ELEMENT = pl.element().struct
_ANSWER = 8
"""Step code of the appended answer step (tool calls are 1, 3, 5, 7; other steps 0)."""


def _step_codes(search_tool_pattern: str) -> pl.Expr:
    """Per step: 0 not a tool call, 1 failed call, 3 call, 5 failed search, 7 search."""
    step_type = _ELEMENT.field("type")
    failed = (step_type.shift(-1) == "error_recovery").fill_null(False)
    searched = _ELEMENT.field("tool_name").str.contains(search_tool_pattern).fill_null(False)
    return (
        pl.when(step_type == "tool_call")
        .then(1 + (~failed).cast(pl.UInt8) * 2 + searched.cast(pl.UInt8) * 4)
        .otherwise(0)
        .cast(pl.UInt8)
    )


def _counted(condition: pl.Expr) -> pl.Expr:
    return pl.col("code").list.eval(condition.sum()).list.first().fill_null(0).cast(pl.Int64)


def derived_factors(traces: pl.LazyFrame, search_tool_pattern: str) -> pl.LazyFrame:
    """Plan steps with their factors, from trace_id, confidence and steps (type, tool_name,
    step_id); one `answer` step per trace, so a trace with no steps still gets one.

    Rows come trace by trace in input order, each trace's plan steps in step order with its
    answer step last (`trace_levels(..., contiguous=True)` relies on this).
    """
    code = pl.element()
    coded = (
        traces.select(
            "trace_id",
            "confidence",
            code=pl.col("steps").list.eval(_step_codes(search_tool_pattern)),
            source_step_id=pl.col("steps").list.eval(_ELEMENT.field("step_id")),
        )
        .with_columns(
            calls=_counted(code > 0),
            successes=_counted((code == 3) | (code == 7)),
            searches=_counted(code >= 5),
            hits=_counted(code == 7),
        )
        .select(
            "trace_id",
            "confidence",
            "calls",
            "successes",
            "searches",
            "hits",
            step_index=pl.int_ranges(0, pl.col("code").list.len() + 1, dtype=pl.Int64),
            code=pl.concat_list("code", pl.lit(_ANSWER, pl.UInt8)),
            source_step_id=pl.concat_list("source_step_id", pl.lit(None, pl.Int64)),
        )
        .explode(["step_index", "code", "source_step_id"])
        .filter(pl.col("code") > 0)
    )
    answer = pl.col("code") == _ANSWER
    ok = pl.col("code").is_in([3, 7]).cast(pl.Int64)
    search = pl.col("code").is_in([5, 7])
    return coded.select(
        "trace_id",
        "step_index",
        is_search_step=search,
        search_result_count=pl.when(answer)
        .then(pl.when(pl.col("searches") > 0).then(pl.col("hits")))
        .when(search)
        .then(ok),
        search_score_mean=pl.lit(None, pl.Float64),
        tool_calls=pl.when(answer).then(pl.col("calls")).otherwise(1),
        tool_successes=pl.when(answer).then(pl.col("successes")).otherwise(ok),
        source_count=pl.when(answer).then(pl.col("successes")),
        source_agreement=pl.lit(None, pl.Float64),
        llm_self_eval=pl.when(answer).then(pl.col("confidence")),
        query_coverage=pl.lit(None, pl.Float64),
        step_kind=pl.when(answer).then(pl.lit("answer")).otherwise(pl.lit("tool_call")),
        source_step_id="source_step_id",
    ).select(pl.col(name).cast(dtype) for name, dtype in DERIVED_COLUMNS.items())
