"""Derived mode: GRACE's factors read off the trace export itself, no extra input, no LLM.

Each plan step becomes a ConfidenceFactors row, filled the way the original's executor fills
it (grace/executor.py at ceb06343: tool counts and rate from the tool's success, source
agreement 1.0 when there are no texts to compare), then scored by the same calculator.
Rules (docs/confidence.md):
- every tool_call step is a plan step; it is a search step when its tool name matches
  `search_tool_pattern`; it failed when the step right after it is an error_recovery step;
  tool_execution_count = 1, tool_success_count = tool_success_rate = 0 if it failed else 1;
  a successful search counts as one result of relevance 1 (search_result_count 1, mean and best
  score 1.0, variance 0.0), a failed one as no results;
- every trace ends with one `answer` step (non-search): tool counts summed over the trace and
  tool_success_rate = successes / executions (1.0 without tools), the successful searches as
  results of relevance 1, source_count = successful tool calls, llm_self_confidence =
  outcome.confidence.
"""

from __future__ import annotations

import polars as pl

from transforms.confidence.batch import FACTOR_SCHEMA
from transforms.confidence.exact import divide

__all__ = ["DERIVED_COLUMNS", "STEP_KINDS", "derived_factors"]

STEP_KINDS = ("tool_call", "answer", "factors")
"""`step_kind` of a plan step: a derived tool call, a derived answer, or a factors-table row."""

DERIVED_COLUMNS = {**FACTOR_SCHEMA, "step_kind": pl.String(), "source_step_id": pl.Int64()}
"""FACTOR_SCHEMA plus where the step came from (the trace step's step_id for tool calls)."""

RELEVANCE = 1.0
"""The relevance score of a successful search's one result (traces carry no scores)."""

SOURCE_AGREEMENT = 1.0
"""The executor's source agreement when there are no source texts to compare."""

_ELEMENT = pl.element().struct
_CALL, _SEARCH, _RECOVERY, _ANSWER = 1, 3, 4, 8
"""Step codes: a tool call, a search call, an error_recovery step, the appended answer."""


def _running_count(flag: pl.Expr, answer: pl.Expr) -> pl.Expr:
    """At a trace's answer row: how many of the trace's rows have `flag`.

    Rows are contiguous per trace with the answer row last, so the count is the running total
    at this answer row minus the running total at the previous one (integers: exact).
    """
    total = flag.cast(pl.Int64).cum_sum()
    before = pl.when(answer).then(total).shift(1).forward_fill().fill_null(0)
    return total - before


def _plan_steps(traces: pl.LazyFrame, search_tool_pattern: str) -> pl.LazyFrame:
    """One row per tool call and one answer row per trace (code, ok, step_index,
    source_step_id, trace_id, confidence), in trace order, each trace's answer last."""
    steps = pl.col("steps")
    step_type = _ELEMENT.field("type")
    searched = _ELEMENT.field("tool_name").str.contains(search_tool_pattern).fill_null(False)
    code = (
        pl.when(step_type == "tool_call")
        .then(_CALL + searched.cast(pl.UInt8) * (_SEARCH - _CALL))
        .when(step_type == "error_recovery")
        .then(_RECOVERY)
        .otherwise(0)
        .cast(pl.UInt8)
    )
    numbered = traces.with_row_index("_trace")
    return (
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
        .with_columns(ok=(pl.col("code").shift(-1) != _RECOVERY).fill_null(True))
        .filter(pl.col("code").is_in([_CALL, _SEARCH, _ANSWER]))
        .join(
            numbered.select("_trace", "trace_id", "confidence"),
            on="_trace",
            how="left",
            maintain_order="left",
        )
    )


def _factors(answer: pl.Expr) -> dict[str, pl.Expr]:
    """The ConfidenceFactors columns of tool-call rows and answer rows (flags `search`, `ok`,
    and the trace counts `calls`, `successes`, `hits` at answer rows)."""
    ok, search = pl.col("ok"), pl.col("search")
    calls, successes, hits = pl.col("calls"), pl.col("successes"), pl.col("hits")
    found = pl.when(answer).then(hits > 0).otherwise(search & ok)
    rate = pl.when(calls > 0).then(divide(successes, calls)).otherwise(1.0)
    return {
        "search_result_count": pl.when(answer)
        .then(hits)
        .when(search)
        .then(ok.cast(pl.Int64))
        .otherwise(0),
        "search_avg_score": pl.when(found).then(RELEVANCE).otherwise(0.0),
        "search_max_score": pl.when(found).then(RELEVANCE).otherwise(0.0),
        "search_score_variance": pl.when(found).then(0.0).otherwise(1.0),
        "source_agreement": pl.lit(SOURCE_AGREEMENT),
        "source_count": pl.when(answer).then(successes).otherwise(0),
        "llm_self_confidence": pl.when(answer).then(pl.col("confidence")).otherwise(None),
        "tool_success_rate": pl.when(answer).then(rate).otherwise(ok.cast(pl.Float64)),
        "tool_execution_count": pl.when(answer).then(calls).otherwise(1),
        "tool_success_count": pl.when(answer).then(successes).otherwise(ok.cast(pl.Int64)),
        "query_coverage": pl.lit(None, pl.Float64),
        "is_search_step": search,
    }


def derived_factors(traces: pl.LazyFrame, search_tool_pattern: str) -> pl.LazyFrame:
    """Plan steps with their factors, from trace_id, confidence and steps (type, tool_name,
    step_id); one `answer` step per trace, so a trace with no steps still gets one. A null
    factor (self-confidence of a tool call, query coverage) is left for the original's default.

    Rows come trace by trace in input order, each trace's plan steps in step order with its
    answer step last (`trace_levels(..., ordered=True)` relies on this).
    """
    answer = pl.col("code") == _ANSWER
    call = pl.col("code").is_in([_CALL, _SEARCH])
    flagged = (
        _plan_steps(traces, search_tool_pattern)
        .with_columns(search=pl.col("code") == _SEARCH, ok=call & pl.col("ok"))
        .with_columns(
            calls=_running_count(call, answer),
            successes=_running_count(pl.col("ok"), answer),
            hits=_running_count(pl.col("search") & pl.col("ok"), answer),
        )
    )
    return flagged.select(
        "trace_id",
        "step_index",
        **_factors(answer),
        step_kind=pl.when(answer).then(pl.lit("answer")).otherwise(pl.lit("tool_call")),
        source_step_id="source_step_id",
    ).select(pl.col(name).cast(dtype) for name, dtype in DERIVED_COLUMNS.items())
