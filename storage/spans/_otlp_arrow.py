"""OTLP JSON lines read by Arrow (`storage.spans._otlp.collector_schema`) to span rows.

The same rows `storage.spans._otlp.request_rows` makes from a parsed message, built column-wise with
Polars: ids from hex (the OTLP JSON form) or base64 (the protobuf JSON mapping's form) to
lowercase hex, times to integers, status codes to names, the wanted attributes to text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl
import pyarrow as pa
from google.protobuf import json_format
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from storage.spans._otlp import any_value_text
from storage.spans.genai_events import EVENT_NAMES, span_event_attributes
from transforms.otel_spans import RAW_SPAN_SCHEMA

__all__ = ["arrow_rows"]

_STATUS = {
    "0": "UNSET",
    "1": "OK",
    "2": "ERROR",
    "STATUS_CODE_UNSET": "UNSET",
    "STATUS_CODE_OK": "OK",
    "STATUS_CODE_ERROR": "ERROR",
}
_SCALARS = ("stringValue", "intValue", "doubleValue", "bytesValue")


def _id(column: str, size: int) -> pl.Expr:
    """Lowercase hex of a `size`-byte id written as hex or as base64; null otherwise."""
    text = pl.col(column).str.strip_chars()
    hex_digits = text.str.contains(f"^[0-9a-fA-F]{{{2 * size}}}$")
    decoded = text.str.decode("base64", strict=False)
    from_base64 = pl.when(decoded.bin.size() == size).then(decoded.bin.encode("hex"))
    return (
        pl.when(hex_digits)
        .then(text.str.to_lowercase())
        .when(text.str.len_chars() == 4 * ((size + 2) // 3))
        .then(from_base64)
        .alias(column)
    )


def _value_text(value: pl.Expr) -> pl.Expr:
    """The text of a scalar AnyValue (arrays and lists are filled in by `_nested_texts`)."""
    field = value.struct.field
    return pl.coalesce(
        field("stringValue"),
        field("intValue"),
        field("boolValue").cast(pl.String),
        field("doubleValue").cast(pl.String),
        field("bytesValue"),
    )


def deeper_than_schema(attributes: pl.DataFrame) -> bool:
    """True when one of the attribute rows (`key`, `value`) holds arrays or lists nested deeper than the schema reads
    (the empty-struct marker of `collector_schema` is set): such lines need the full parser."""
    values = attributes["value"]
    if values.is_empty():
        return False
    nested = [
        values.struct.field(container).struct.field("values")
        for container in ("arrayValue", "kvlistValue")
    ]
    for series in nested:
        inner = series.explode().drop_nulls()
        if inner.is_empty():
            continue
        if isinstance(inner.dtype, pl.Struct) and "value" in [f.name for f in inner.dtype.fields]:
            inner = inner.struct.field("value")
        for container in ("arrayValue", "kvlistValue"):
            if inner.struct.field(container).is_not_null().any():
                return True
    return False


def _nested_texts(values: pl.Series) -> pl.Series:
    """JSON text of AnyValue structs holding arrays or lists, through the official parser."""
    texts = []
    for value in values.to_list():
        texts.append(
            None
            if value is None
            else any_value_text(json_format.ParseDict(_pruned(value), AnyValue()))
        )
    return pl.Series(texts, dtype=pl.String)


def _pruned(value: Any) -> Any:
    """The Arrow-decoded AnyValue as the JSON object it was, without the fields it lacked."""
    if isinstance(value, dict):
        return {
            key: _pruned(item) for key, item in value.items() if item is not None and item != {}
        }
    if isinstance(value, list):
        return [_pruned(item) for item in value]
    return value


def _texts(attributes: pl.DataFrame) -> pl.DataFrame:
    """Attribute rows (`_span`, `key`, `value` struct) with `value` as text."""
    value = pl.col("value")
    nested = (
        value.struct.field("arrayValue").is_not_null()
        | value.struct.field("kvlistValue").is_not_null()
    )
    flagged = attributes.with_columns(_nested=nested.fill_null(False))
    if not flagged["_nested"].any():
        return flagged.select("_span", "key", _value_text(value).alias("value"))
    scalar = flagged.filter(~pl.col("_nested")).select(
        "_span", "key", _value_text(value).alias("value")
    )
    deep = flagged.filter(pl.col("_nested"))
    deep = deep.select("_span", "key", _nested_texts(deep["value"]).alias("value"))
    return pl.concat([scalar, deep]).sort("_span", maintain_order=True)


def arrow_rows(
    table: pa.Table,
    records: list[int],
    source: str,
    wanted: Callable[[pl.Expr], pl.Expr],
) -> pl.DataFrame | None:
    """The span rows of JSON lines Arrow read (`records`: each line's number), or None when a
    wanted attribute nests deeper than the schema holds, or a span keeps its content in events
    (Monocle's, with a `span.type`; GenAI content events), which the full parser reads."""
    resources = (
        pl.from_arrow(table)
        .with_columns(record_number=pl.Series(records, dtype=pl.Int64))  # type: ignore[union-attr]
        .explode("resourceSpans")
        .unnest("resourceSpans")
        .with_row_index("_res")
    )
    spans = (
        resources.select("record_number", "_res", "scopeSpans")
        .explode("scopeSpans")
        .select("record_number", "_res", _s=pl.col("scopeSpans").struct.field("spans"))
        .explode("_s")
        .drop_nulls("_s")
        .unnest("_s")
        .with_row_index("_span")
    )
    every = spans.select("_span", "attributes").explode("attributes").unnest("attributes")
    if (every["key"] == "span.type").any():
        return None  # Monocle's: its events may hold arrays, which this schema does not read
    own = every.drop_nulls("key").filter(wanted(pl.col("key")))
    said = _content_rows(spans, own.schema["value"])
    if said is None:
        return None
    own = pl.concat([own, said.filter(wanted(pl.col("key")))])
    shared = _long(
        resources.select("_res", _a=pl.col("resource").struct.field("attributes")), "_a", wanted
    )
    inherited = spans.select("_span", "_res").join(shared, on="_res").drop("_res")
    attributes = pl.concat([own, inherited])
    if deeper_than_schema(attributes):
        return None
    return _span_frame(spans, attributes, source)


def _content_rows(spans: pl.DataFrame, value_type: pl.DataType) -> pl.DataFrame | None:
    """Attribute rows (`_span`, `key`, `value` as an AnyValue of `value_type`) of what the
    spans' content events say (`storage.spans.genai_events`), for the keys a span does not set
    itself; worked out in Python for those spans only. None when an event's attribute is not
    a scalar (this schema reads an event's scalars only: the full parser reads the rest)."""
    named = pl.element().struct.field("name").is_in(list(EVENT_NAMES))
    picked = spans.filter(pl.col("events").list.eval(named).list.any())
    item = pl.element().struct
    keys = pl.col("attributes").list.eval(item.field("key")).alias("_keys")
    operation = (
        pl.col("attributes")
        .list.eval(
            item.field("value")
            .struct.field("stringValue")
            .filter(item.field("key") == "gen_ai.operation.name")
        )
        .list.first()
        .alias("_operation")
    )
    rows: list[tuple[int, str, dict[str, str]]] = []
    for span, names, called, events in picked.select(
        "_span", keys, operation, "events"
    ).iter_rows():
        # the span's own keys (a key it sets is kept) and its operation: all the reading needs
        given = {**dict.fromkeys(names or []), "gen_ai.operation.name": called}
        listed = []
        for event in events or []:
            values = {item["key"]: _scalar(item["value"]) for item in event["attributes"] or []}
            if event["name"] in EVENT_NAMES and None in values.values():
                return None
            listed.append({"name": event["name"], "attributes": values})
        found = span_event_attributes(given, listed)
        rows.extend((span, key, {"stringValue": text}) for key, text in found)
    schema = {"_span": spans.schema["_span"], "key": pl.String(), "value": value_type}
    return pl.DataFrame(rows, schema=schema, orient="row")


def _scalar(value: dict[str, Any] | None) -> Any:
    """A scalar AnyValue as Arrow read it (`_value_text`'s fields), as Python's value; None for
    an array or a key-value list, whose values this schema does not hold."""
    for field in (*_SCALARS, "boolValue"):
        found = None if value is None else value.get(field)
        if found is not None:
            return found
    return None


def _long(frame: pl.DataFrame, column: str, wanted: Callable[[pl.Expr], pl.Expr]) -> pl.DataFrame:
    """One row per wanted attribute: the frame's key column, `key`, `value` (an AnyValue)."""
    return frame.explode(column).unnest(column).drop_nulls("key").filter(wanted(pl.col("key")))


def _span_frame(spans: pl.DataFrame, attributes: pl.DataFrame, source: str) -> pl.DataFrame:
    grouped = (
        _texts(attributes)
        .group_by("_span", maintain_order=True)
        .agg(pl.struct("key", "value").alias("attributes"))
    )
    exception = (
        pl.col("events")
        .list.eval(
            pl.element()
            .filter(pl.element().struct.field("name") == "exception")
            .struct.field("attributes")
        )
        .list.first()
    )
    message = exception.list.eval(
        pl.element()
        .filter(pl.element().struct.field("key") == "exception.message")
        .struct.field("value")
        .struct.field("stringValue")
    ).list.first()
    status = pl.col("status").struct
    frame = (
        spans.drop("attributes")
        .join(grouped, on="_span", how="left", maintain_order="left")
        .select(
            pl.lit(source).alias("source_file"),
            "record_number",
            _id("traceId", 16).alias("trace_hex"),
            _id("spanId", 8).alias("span_hex"),
            _id("parentSpanId", 8).alias("parent_hex"),
            "name",
            pl.col("startTimeUnixNano").cast(pl.Int64, strict=False).alias("start_ns"),
            pl.col("endTimeUnixNano").cast(pl.Int64, strict=False).alias("end_ns"),
            status.field("code")
            .cast(pl.String)
            .replace_strict(_STATUS, default="UNSET")
            .alias("status"),
            pl.when(status.field("message") != "")
            .then(status.field("message"))
            .alias("status_message"),
            message.alias("exception_message"),
            pl.col("attributes").fill_null([]),
        )
    )
    return frame.with_columns(
        pl.when(pl.col(c) > 0).then(pl.col(c)).alias(c) for c in ("start_ns", "end_ns")
    ).cast(pl.Schema(RAW_SPAN_SCHEMA))
