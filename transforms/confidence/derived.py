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


def derived_factors(traces: pl.LazyFrame, search_tool_pattern: str) -> pl.LazyFrame:
    """Plan steps with their factors, from trace_id, confidence and steps (type, tool_name,
    step_id); one `answer` step per trace, so a trace with no steps still gets one."""
    steps = traces.select(
        "trace_id",
        step_index=pl.int_ranges(0, pl.col("steps").list.len(), dtype=pl.Int64),
        type=pl.col("steps").list.eval(_ELEMENT.field("type")),
        next_type=pl.col("steps").list.eval(_ELEMENT.field("type")).list.shift(-1),
        tool_name=pl.col("steps").list.eval(_ELEMENT.field("tool_name")),
        source_step_id=pl.col("steps").list.eval(_ELEMENT.field("step_id")),
    )
    calls = (
        steps.explode(["step_index", "type", "next_type", "tool_name", "source_step_id"])
        .filter(pl.col("type") == "tool_call")
        .select(
            "trace_id",
            "step_index",
            "source_step_id",
            is_search_step=pl.col("tool_name").str.contains(search_tool_pattern).fill_null(False),
            ok=(pl.col("next_type") != "error_recovery").fill_null(True).cast(pl.Int64),
        )
    )
    tool_steps = calls.select(
        "trace_id",
        "step_index",
        "is_search_step",
        search_result_count=pl.when(pl.col("is_search_step")).then(pl.col("ok")),
        tool_calls=pl.lit(1, pl.Int64),
        tool_successes=pl.col("ok"),
        step_kind=pl.lit("tool_call"),
        source_step_id="source_step_id",
    )
    per_trace = calls.group_by("trace_id").agg(
        tool_calls=pl.len().cast(pl.Int64),
        tool_successes=pl.col("ok").sum(),
        searches=pl.col("is_search_step").sum().cast(pl.Int64),
        search_hits=pl.col("ok").filter(pl.col("is_search_step")).sum(),
    )
    answers = (
        traces.select("trace_id", "confidence", n=pl.col("steps").list.len().cast(pl.Int64))
        .join(per_trace, on="trace_id", how="left", maintain_order="left")
        .select(
            "trace_id",
            step_index="n",
            is_search_step=pl.lit(False),
            search_result_count=pl.when(pl.col("searches") > 0).then(pl.col("search_hits")),
            tool_calls=pl.col("tool_calls").fill_null(0),
            tool_successes=pl.col("tool_successes").fill_null(0),
            source_count=pl.col("tool_successes").fill_null(0),
            llm_self_eval="confidence",
            step_kind=pl.lit("answer"),
            source_step_id=pl.lit(None, pl.Int64),
        )
    )
    steps_and_answers = pl.concat([tool_steps, answers], how="diagonal_relaxed")
    present = steps_and_answers.collect_schema().names()
    return steps_and_answers.select(
        pl.col(name).cast(dtype) if name in present else pl.lit(None, dtype).alias(name)
        for name, dtype in DERIVED_COLUMNS.items()
    )
