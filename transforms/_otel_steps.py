"""The steps of imported OTel traces: which spans become steps, of which type, in which order.

Works on `FACT_SCHEMA` rows that carry a `group` column (the trace each span belongs to); the
rules are docs/import.md ("Importing OpenTelemetry spans", steps). Pure Polars.
"""

from __future__ import annotations

import polars as pl

from transforms.config.otel import OtelImportConfig

__all__ = ["STEP_KINDS", "step_rows", "step_spans", "steps_per_group"]

STEP_KINDS = ("llm", "tool", "retrieval")
"""Span kinds that become steps."""

_ERROR = "ERROR"


def shortened(text: pl.Expr, limit: int) -> pl.Expr:
    """`text` cut to at most `limit` characters, the last one "…" when something was cut."""
    if limit == 0:
        return pl.lit(None, dtype=pl.String)
    return (
        pl.when(text.str.len_chars() > limit)
        .then(pl.concat_str(text.str.slice(0, limit - 1), pl.lit("…")))
        .otherwise(text)
    )


def _retries(config: OtelImportConfig) -> dict[str, pl.Expr]:
    """`retry`: the span retries an earlier span of the same group that failed.

    A tool (or retrieval) span retries the previous call of the same tool when that call's
    status was ERROR and at most `retry_window` calls of other tools came between. A model
    call retries the previous model call when that one failed and no tool ran between them.
    """
    is_tool = pl.col("kind") != "llm"
    same_tool = ["_g", "_is_tool", "_tool"]
    failed_before = pl.col("status").shift(1).over(same_tool) == _ERROR
    between = pl.col("_tool_ord") - pl.col("_tool_ord").shift(1).over(same_tool) - 1
    within = pl.lit(True) if config.retry_window is None else between <= config.retry_window
    tool_retry = is_tool & failed_before & within
    same_kind = ["_g", "_is_tool"]
    model_retry = (
        ~is_tool
        & (pl.col("status").shift(1).over(same_kind) == _ERROR)
        & (pl.col("_tool_ord") == pl.col("_tool_ord").shift(1).over(same_kind))
    )
    return {"retry": (tool_retry | model_retry).fill_null(False)}


def _echoed_calls(candidates: pl.DataFrame) -> pl.DataFrame:
    """The model calls (`group`, `span_hex`) that repeat one enclosing them: the same text
    within another model call's time in the same group. One call traced twice (a framework's
    own span and, inside it, an instrumented client's: ADK's `call_llm` and OpenLLMetry's
    `openai.chat`) is one step, the outer one."""
    texts = candidates.filter(
        (pl.col("kind") == "llm") & (pl.col("text").str.strip_chars() != "")
    ).select("group", "span_hex", "start_ns", "end_ns", _text=pl.col("text").str.strip_chars())
    outer = texts.rename({"span_hex": "_outer", "start_ns": "_start", "end_ns": "_end"})
    within = (pl.col("_start") <= pl.col("start_ns")) & (pl.col("_end") >= pl.col("end_ns"))
    longer = (pl.col("_start") < pl.col("start_ns")) | (pl.col("_end") > pl.col("end_ns"))
    return (
        texts.join(outer, on=["group", "_text"])
        .filter(
            (pl.col("_outer") != pl.col("span_hex"))
            & within
            & (longer | (pl.col("_outer") < pl.col("span_hex")))
        )
        .select("group", "span_hex")
        .unique()
    )


def step_rows(spans: pl.DataFrame, config: OtelImportConfig) -> pl.DataFrame:
    """Every span that may be a step, in step order, with `retry`, `keep` and `_g` (the
    group's number in this order: windows over an integer run faster than over the text id).

    A model call is kept when its output has text, when it failed, or when it is a retry;
    a model call that only asked for tool calls is not kept: the tool spans that follow are
    its steps (docs/import.md says why). A model call that repeats one enclosing it
    (`_echoed_calls`) is no step: it comes last, `echo` true and not kept.
    """
    candidates = spans.filter(pl.col("kind").is_in(STEP_KINDS))
    echoes = _echoed_calls(candidates)
    candidates = candidates.join(
        echoes, on=["group", "span_hex"], how="anti", maintain_order="left"
    ).sort("group", "start_ns", "span_hex")
    is_tool = pl.col("kind") != "llm"
    if config.tool_error_pattern is not None:
        said = is_tool & pl.col("tool_output").str.contains(config.tool_error_pattern)
        candidates = candidates.with_columns(
            status=pl.when(said.fill_null(False)).then(pl.lit(_ERROR)).otherwise("status")
        )
    group_number = (pl.col("group") != pl.col("group").shift(1)).fill_null(True).cum_sum()
    marked = (
        candidates.with_columns(
            _g=group_number,
            _is_tool=is_tool,
            _tool=pl.when(is_tool).then(pl.coalesce("tool_name", "name")),
        )
        .with_columns(_tool_ord=is_tool.cast(pl.Int64).cum_sum().over("_g"))
        .with_columns(**_retries(config))
    )
    text_present = pl.col("text").str.strip_chars().str.len_chars().fill_null(0) > 0
    steps = marked.with_columns(
        keep=pl.col("_is_tool") | pl.col("retry") | (pl.col("status") == _ERROR) | text_present,
        echo=pl.lit(False),
    )
    if echoes.is_empty():
        return steps
    echoed = echoes.with_columns(keep=pl.lit(False), echo=pl.lit(True))
    return pl.concat([steps, echoed], how="diagonal_relaxed")


def _error_object(limit: int) -> pl.Expr:
    """A failed tool span's output_summary: `{"error": ...}` holding its error (else its output)
    cut to `limit`. A step has no status field and an error message alone does not read as a
    failure; derived confidence reads this object as one (`error_keys`). Null when `limit` is 0."""
    if limit == 0:
        return pl.lit(None, dtype=pl.String)
    message = pl.coalesce("error", "tool_output", pl.lit("status ERROR"))
    return pl.struct(error=shortened(message, limit)).struct.json_encode()


def steps_per_group(rows: pl.DataFrame, config: OtelImportConfig) -> pl.DataFrame:
    """One row per group: `steps`, the list of step structs (ReasoningTrace step fields, with
    `tool_name` for `tool.name`), numbered from 0 in start order."""
    kept = rows.filter(pl.col("keep"))
    limit = config.output_summary_chars
    is_tool = pl.col("_is_tool")
    step = pl.struct(
        step_id=pl.int_range(pl.len()).over("_g").cast(pl.Int64),
        type=pl.when(pl.col("retry"))
        .then(pl.lit("error_recovery"))
        .when(is_tool)
        .then(pl.lit("tool_call"))
        .otherwise(pl.lit("thought")),
        content=pl.when(~is_tool).then(pl.col("text")),
        tool_name=pl.when(is_tool).then(pl.col("_tool")),
        input=pl.when(is_tool).then(pl.col("tool_input")),
        output_summary=pl.when(is_tool & (pl.col("status") == _ERROR))
        .then(_error_object(limit))
        .otherwise(
            shortened(
                pl.when(is_tool)
                .then(pl.coalesce("tool_output", "error"))
                .otherwise(pl.col("error")),
                limit,
            )
        ),
        # to the nanosecond: Polars divides by a constant through its reciprocal, which
        # leaves 49718000 ns as 49.717999999999996 ms; rounding gives the division's value
        latency_ms=pl.when(pl.col("end_ns") >= pl.col("start_ns")).then(
            ((pl.col("end_ns") - pl.col("start_ns")) / 1e6).round(6)
        ),
    )
    return (
        kept.with_columns(step=step)
        .group_by("group", maintain_order=True)
        .agg("step")
        .rename({"step": "steps"})
    )


def step_spans(rows: pl.DataFrame) -> pl.DataFrame:
    """The span each step of `steps_per_group` was made from: group, step_id, trace_hex,
    span_hex (the same kept rows, numbered in the same order)."""
    kept = rows.filter(pl.col("keep"))
    return kept.select(
        "group",
        step_id=pl.int_range(pl.len()).over("_g").cast(pl.Int64),
        trace_hex=pl.col("trace_hex"),
        span_hex=pl.col("span_hex"),
    )
