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
"""Step code of the answer row appended to every trace."""


def _per_trace(flag: pl.Expr, answer: pl.Expr) -> pl.Expr:
    """At a trace's answer row: how many of the trace's rows have `flag`.

    Rows are contiguous per trace with the answer row last, so the count is the running total
    at this answer row minus the running total at the previous one (integers: exact).
    """
    total = flag.cast(pl.Int64).cum_sum()
    before = pl.when(answer).then(total).shift(1).forward_fill().fill_null(0)
    return total - before


def derived_factors(traces: pl.LazyFrame, search_tool_pattern: str) -> pl.LazyFrame:
    """Plan steps with their factors, from trace_id, confidence and steps (type, tool_name,
    step_id); one `answer` step per trace, so a trace with no steps still gets one.

    Rows come trace by trace in input order, each trace's plan steps in step order with its
    answer step last (`trace_levels(..., ordered=True)` relies on this).
    """
    steps = pl.col("steps")
    step_type = _ELEMENT.field("type")
    searched = _ELEMENT.field("tool_name").str.contains(search_tool_pattern).fill_null(False)
    # Per step: 1 tool call, 3 search call, 4 error_recovery, 0 anything else; 8 the answer.
    code = (
        pl.when(step_type == "tool_call")
        .then(1 + searched.cast(pl.UInt8) * 2)
        .when(step_type == "error_recovery")
        .then(4)
        .otherwise(0)
        .cast(pl.UInt8)
    )
    numbered = traces.with_row_index("_trace")
    rows = (
        numbered.select(
            "_trace",
            step_index=pl.int_ranges(0, steps.list.len() + 1, dtype=pl.Int64),
            code=pl.concat_list(steps.list.eval(code), pl.lit(_ANSWER, pl.UInt8)),
            source_step_id=pl.concat_list(
                steps.list.eval(_ELEMENT.field("step_id")), pl.lit(None, pl.Int64)
            ),
        )
        .explode(["step_index", "code", "source_step_id"])
        # The row after a trace's last step is its answer row: a shift never crosses traces.
        .with_columns(ok=(pl.col("code").shift(-1) != 4).fill_null(True))
        .filter(pl.col("code").is_in([1, 3, _ANSWER]))
        .join(
            numbered.select("_trace", "trace_id", "confidence"),
            on="_trace",
            how="left",
            maintain_order="left",
        )
    )
    answer = pl.col("code") == _ANSWER
    call = pl.col("code").is_in([1, 3])
    search = pl.col("code") == 3
    flagged = rows.with_columns(
        answer=answer, call=call, ok=call & pl.col("ok"), search=search
    ).with_columns(
        calls=_per_trace(pl.col("call"), pl.col("answer")),
        successes=_per_trace(pl.col("ok"), pl.col("answer")),
        searches=_per_trace(pl.col("search"), pl.col("answer")),
        hits=_per_trace(pl.col("search") & pl.col("ok"), pl.col("answer")),
    )
    is_answer = pl.col("answer")
    ok_count = pl.col("ok").cast(pl.Int64)
    return (
        flagged.filter(pl.col("call") | is_answer)
        .select(
            "trace_id",
            "step_index",
            is_search_step="search",
            search_result_count=pl.when(is_answer)
            .then(pl.when(pl.col("searches") > 0).then(pl.col("hits")))
            .when(pl.col("search"))
            .then(ok_count),
            search_score_mean=pl.lit(None, pl.Float64),
            tool_calls=pl.when(is_answer).then(pl.col("calls")).otherwise(1),
            tool_successes=pl.when(is_answer).then(pl.col("successes")).otherwise(ok_count),
            source_count=pl.when(is_answer).then(pl.col("successes")),
            source_agreement=pl.lit(None, pl.Float64),
            llm_self_eval=pl.when(is_answer).then(pl.col("confidence")),
            query_coverage=pl.lit(None, pl.Float64),
            step_kind=pl.when(is_answer).then(pl.lit("answer")).otherwise(pl.lit("tool_call")),
            source_step_id="source_step_id",
        )
        .select(pl.col(name).cast(dtype) for name, dtype in DERIVED_COLUMNS.items())
    )
