"""Langfuse trace lines read column-wise: the span rows `storage.spans.langfuse.langfuse_rows` and
`storage.spans.phoenix.phoenix_rows` make of them, without a Python pass over each observation.

`storage.spans._langfuse_read` decodes the lines it can read as the per-line reader would into one
row an observation and one row an attribute; `storage.spans._langfuse_columns` works out each span
row's columns; here they are put together as the per-line reader does: an attribute's key held
by the first to set it (metadata attributes, resource attributes, what the input and output
say, the trace's own input and output on its top spans), flattened, filtered, the span's kind
added. Lines not taken are left to the per-line reader, which keeps each rejection's rule and
reason. tests/spans/test_langfuse_lines.py holds both readers to the same rows.

One difference is known: a message list (`gen_ai.input.messages`, `gen_ai.output.messages`) is the
JSON text the line holds, not the text `json.dumps` writes of it; the OTel mapping decodes both
to the same messages.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import polars as pl

from storage.spans._langfuse_columns import field_rows, span_columns, tools_by_line
from storage.spans._langfuse_read import TOP, observations
from storage.spans._messages import text_of
from storage.spans.langfuse import TAGS_KEY, VERSION_KEY, run_input
from storage.spans.phoenix import flat_pairs
from transforms.otel_spans import RAW_SPAN_SCHEMA

__all__ = ["langfuse_block"]

_LONG = {
    "sid": pl.Int64,
    "priority": pl.Int32,
    "ord": pl.Int64,
    "sub": pl.Int64,
    "key": pl.String,
    "value": pl.String,
}


def _top_rows(spans: pl.DataFrame) -> list[tuple]:
    """The trace's own input and output (sid, 3, ord, key, text, None: `TOP`) on the spans
    of each line whose parent is not among that line's spans (`top_rows_given`)."""
    rows: list[tuple] = []
    given = spans.filter(pl.col("trace_input").is_not_null() | pl.col("trace_output").is_not_null())
    for (_, given_text, got_text), group in given.group_by(
        "number", "trace_input", "trace_output", maintain_order=True
    ):
        texts = (("input.value", given_text), ("output.value", got_text))
        top = group.filter(pl.col("top"))["sid"].to_list()
        for order, (key, text) in enumerate(texts):
            value = text_of(text)  # Polars' text of the trace's own value: decoded once
            if value is not None:
                rows.extend((sid, 3, order, key, value, None) for sid in top)
    return rows


def _expanded(rows: pl.DataFrame) -> pl.DataFrame:
    """Top-level attributes (`TOP`) as the key-value texts of a span row: a text as it is,
    JSON through `flat_pairs`, a null (which only held its key) as nothing."""
    plain = rows.filter(pl.col("value").is_not_null()).select(
        "sid",
        "priority",
        "ord",
        pl.lit(0, pl.Int64).alias("sub"),
        pl.col("top").alias("key"),
        "value",
    )
    rest = rows.filter(pl.col("json").is_not_null())
    expanded = [
        (sid, priority, order, sub, key, text)
        for sid, priority, order, top, value in rest.select(
            "sid", "priority", "ord", "top", "json"
        ).iter_rows()
        for sub, (key, text) in enumerate(flat_pairs(top, json.loads(value)))
    ]
    more = pl.DataFrame(expanded, schema=_LONG, orient="row")
    return pl.concat([plain.cast(_LONG), more]).sort(  # type: ignore[arg-type]
        "sid", "priority", "ord", "sub", maintain_order=True
    )


def _with_top(spans: pl.DataFrame) -> pl.DataFrame:
    """`top`: the span's parent is not among its line's spans (a missing id counts as one)."""
    parents = (
        spans.select("number", pl.col("span_hex").alias("parent_hex"), _has=pl.lit(True))
        .drop_nulls("parent_hex")
        .unique(["number", "parent_hex"])
    )
    null_ids = spans.group_by("number").agg(_null_id=pl.col("span_hex").is_null().any())
    return (
        spans.join(parents, on=["number", "parent_hex"], how="left", maintain_order="left")
        .join(null_ids, on="number", how="left", maintain_order="left")
        .with_columns(
            top=pl.when(pl.col("parent_hex").is_null())
            .then(~pl.col("_null_id"))
            .otherwise(pl.col("_has").is_null())
        )
        .drop("_has", "_null_id")
    )


def _held(spans: pl.DataFrame, attributes: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The spans with their kind as the per-line reader settles it (a SPAN named after a
    called tool, an untyped top span holding messages), and each span's attributes: the
    first to set a key holds it (metadata, resource, input and output, the trace's own
    input and output, then its version and tags)."""
    tools, fields = field_rows(spans, tools_by_line(spans))
    spans = spans.with_columns(
        kind=pl.when(tools & (pl.col("upper_type") == "SPAN"))
        .then(pl.lit("TOOL"))
        .otherwise("kind")
    )
    top = pl.DataFrame(_top_rows(spans), schema=TOP, orient="row")
    tagged = [
        spans.filter(pl.col(column).is_not_null()).select(
            "sid",
            priority=pl.lit(4, pl.Int32),
            ord=pl.lit(0, pl.Int64),
            top=pl.lit(key),
            value=column,
            json=pl.lit(None, pl.String),
        )
        for key, column in ((VERSION_KEY, "trace_version"), (TAGS_KEY, "trace_tags"))
    ]
    named = pl.concat([attributes, fields, top, *tagged])
    held = named.sort("sid", "priority", "ord", maintain_order=True).unique(
        ["sid", "top"], keep="first", maintain_order=True
    )
    tasks = [
        (number, task)
        for number, given, got in spans.select("number", "trace_input", "trace_output")
        .unique("number", maintain_order=True)
        .iter_rows()
        if (task := run_input(text_of(given), text_of(got))) is not None
    ]
    given_task = (
        held.filter(pl.col("top") == "input.value")
        .join(spans.select("sid", "number"), on="sid")
        .join(
            pl.DataFrame(tasks, schema={"number": pl.Int64, "task": pl.String}, orient="row"),
            on="number",
        )
        .filter(pl.col("value") == pl.col("task"))
    )
    runs = pl.concat(
        [held.filter(pl.col("top") == "gen_ai.input.messages")["sid"], given_task["sid"]]
    ).implode()
    chain = pl.col("top") & pl.col("kind").is_null() & pl.col("sid").is_in(runs)
    return spans.with_columns(kind=pl.when(chain).then(pl.lit("CHAIN")).otherwise("kind")), held


def langfuse_block(
    lines: list[tuple[int, str]], source: str, wanted: Callable[[pl.Expr], pl.Expr]
) -> tuple[pl.DataFrame, set[int]]:
    """The span rows (`RAW_SPAN_SCHEMA`) of the Langfuse trace lines among `lines` (number,
    text), and the numbers of the lines left to the per-line reader; `wanted` says which
    attribute keys to keep."""
    numbers = {number for number, _ in lines}
    found = observations(lines) if lines else None
    if found is None:
        return pl.DataFrame(schema=RAW_SPAN_SCHEMA), numbers
    spans, held = _held(_with_top(span_columns(found[0])), found[1])
    kept = _expanded(held).filter(wanted(pl.col("key")))
    said = kept.filter(pl.col("key") == "openinference.span.kind")["sid"].implode()
    kinds = spans.filter(
        pl.col("kind").is_not_null() & (pl.col("kind") != "") & ~pl.col("sid").is_in(said)
    ).select(
        "sid",
        priority=pl.lit(9, pl.Int32),
        ord=pl.lit(0, pl.Int64),
        sub=pl.lit(0, pl.Int64),
        key=pl.lit("openinference.span.kind"),
        value="kind",
    )
    grouped = (
        pl.concat([kept, kinds.cast(_LONG)])  # type: ignore[arg-type]
        .sort("sid", "priority", "ord", "sub", maintain_order=True)
        .group_by("sid", maintain_order=True)
        .agg(_pairs=pl.struct("key", "value"))
    )
    frame = spans.join(grouped, on="sid", how="left", maintain_order="left").select(
        pl.lit(source).alias("source_file"),
        pl.col("number").alias("record_number"),
        "trace_hex",
        "span_hex",
        "parent_hex",
        "name",
        "start_ns",
        "end_ns",
        "status",
        "status_message",
        pl.lit(None, pl.String).alias("exception_message"),
        pl.col("_pairs").fill_null([]).alias("attributes"),
    )
    return frame.cast(pl.Schema(RAW_SPAN_SCHEMA)), numbers - set(spans["number"].to_list())
