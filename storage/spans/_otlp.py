"""OTLP trace requests to span rows (`transforms.otel_spans.RAW_SPAN_SCHEMA`), two ways.

The official `opentelemetry-proto` messages define the format. Protobuf bytes are parsed by
`ExportTraceServiceRequest.ParseFromString`, and JSON lines that the columnar reader cannot
take by `google.protobuf.json_format`; both give a message that `request_rows` walks. JSON lines
in the form the Collector's file exporter writes are read by Arrow's JSON reader against a
schema built from the same message descriptors (`collector_schema`), about twenty times faster
than `json_format`, and then turned into the same rows by `arrow_rows`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import polars as pl
import pyarrow as pa
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from storage.spans.genai_events import EVENT_NAMES, span_event_attributes
from transforms.otel_spans import RAW_SPAN_SCHEMA

__all__ = ["any_value_text", "collector_schema", "request_rows", "rows_frame"]

STATUS_NAMES = {0: "UNSET", 1: "OK", 2: "ERROR"}
"""Status codes of `opentelemetry.proto.trace.v1.Status`, by number."""

_SCALARS = ("stringValue", "boolValue", "intValue", "doubleValue", "bytesValue")
_SPAN_FIELDS = {
    "traceId": None,
    "spanId": None,
    "parentSpanId": None,
    "name": None,
    "startTimeUnixNano": None,
    "endTimeUnixNano": None,
    "attributes": "attributes",
    "events": {"name": None, "attributes": "event_attributes"},
    "status": {"message": None, "code": None},
}
_SIXTY_FOUR_BIT = (
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_FIXED64,
    FieldDescriptor.TYPE_SFIXED64,
)


def _scalar_type(field: FieldDescriptor, enums_as_text: bool) -> pa.DataType:
    """The Arrow type the proto3 JSON mapping gives a scalar field, as the Collector writes it:
    64-bit integers as strings, enums as numbers (or names, with `enums_as_text`), bytes as
    text (OTLP JSON writes ids as hex)."""
    kind = field.type
    if kind in _SIXTY_FOUR_BIT or kind in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES):
        return pa.string()
    if kind == FieldDescriptor.TYPE_BOOL:
        return pa.bool_()
    if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return pa.float64()
    if kind == FieldDescriptor.TYPE_ENUM:
        return pa.string() if enums_as_text else pa.int64()
    return pa.int64()


def _any_value(descriptor: Descriptor, depth: int) -> pa.DataType:
    """AnyValue's scalars, with arrays and key-value lists `depth` levels deep; one level past
    that an empty struct marks a value nested deeper than this schema holds."""
    fields = [
        (name, _scalar_type(descriptor.fields_by_camelcase_name[name], False)) for name in _SCALARS
    ]
    array = descriptor.fields_by_camelcase_name["arrayValue"].message_type
    kvlist = descriptor.fields_by_camelcase_name["kvlistValue"].message_type
    if depth == 0:
        return pa.struct([*fields, ("arrayValue", pa.struct([])), ("kvlistValue", pa.struct([]))])
    inner = _any_value(descriptor, depth - 1)
    values, pairs = array.fields_by_name["values"], kvlist.fields_by_name["values"]
    return pa.struct(
        [
            *fields,
            ("arrayValue", pa.struct([(values.json_name, pa.list_(inner))])),
            (
                "kvlistValue",
                pa.struct(
                    [
                        (
                            pairs.json_name,
                            pa.list_(pa.struct([("key", pa.string()), ("value", inner)])),
                        )
                    ]
                ),
            ),
        ]
    )


def _key_values(descriptor: Descriptor, depth: int | None) -> pa.DataType:
    value = descriptor.fields_by_camelcase_name["value"].message_type
    value_type = (
        pa.struct(
            [(name, _scalar_type(value.fields_by_camelcase_name[name], False)) for name in _SCALARS]
        )
        if depth is None
        else _any_value(value, depth)
    )
    return pa.list_(pa.struct([("key", pa.string()), ("value", value_type)]))


def _message(descriptor: Descriptor, wanted: dict[str, Any], enums_as_text: bool) -> pa.DataType:
    """The Arrow struct of the `wanted` fields of a message (JSON names, descriptor types)."""
    fields = []
    for name, inner in wanted.items():
        field = descriptor.fields_by_camelcase_name[name]
        if inner == "attributes":
            kind = _key_values(field.message_type, 1)
        elif inner == "event_attributes":
            kind = _key_values(field.message_type, None)
        elif isinstance(inner, dict):
            kind = _message(field.message_type, inner, enums_as_text)
        else:
            kind = _scalar_type(field, enums_as_text)
        if field.is_repeated and inner not in ("attributes", "event_attributes"):
            kind = pa.list_(kind)
        fields.append((field.json_name, kind))
    return pa.struct(fields)


def collector_schema(enums_as_text: bool = False) -> pa.Schema:
    """The Arrow schema of an `ExportTraceServiceRequest` JSON line, restricted to the fields the
    import reads, built from the official message descriptors."""
    request = ExportTraceServiceRequest.DESCRIPTOR
    wanted = {
        "resourceSpans": {
            "resource": {"attributes": "attributes"},
            "scopeSpans": {"spans": _SPAN_FIELDS},
        }
    }
    root = _message(request, wanted, enums_as_text)
    return pa.schema([(field.name, field.type) for field in root])


def any_value_text(value: AnyValue) -> str | None:
    """An attribute value as text: strings as they are, numbers and booleans as JSON writes
    them, arrays and key-value lists as JSON, bytes as hex."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    return _text(_python(value))


def _python(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_python(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {item.key: _python(item.value) for item in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return None if kind is None else getattr(value, kind)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _hex(raw: bytes, size: int) -> str | None:
    return raw.hex() if len(raw) == size else None


def _exception_message(span: Any) -> str | None:
    for event in span.events:
        if event.name == "exception":
            for item in event.attributes:
                if item.key == "exception.message":
                    return any_value_text(item.value)
    return None


def request_rows(
    request: ExportTraceServiceRequest,
    wanted: Callable[[str], bool],
    source: str,
    record: int,
) -> list[tuple[Any, ...]]:
    """The span rows (`RAW_SPAN_SCHEMA` order) of one request message from line or message
    `record` of `source`, with the attributes whose key `wanted` accepts."""
    rows = []
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes, wanted)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                status = span.status
                rows.append(
                    (
                        source,
                        record,
                        _hex(span.trace_id, 16),
                        _hex(span.span_id, 8),
                        _hex(span.parent_span_id, 8),
                        span.name,
                        span.start_time_unix_nano or None,
                        span.end_time_unix_nano or None,
                        STATUS_NAMES.get(status.code, "UNSET"),
                        status.message or None,
                        _exception_message(span),
                        _attributes(span.attributes, wanted)
                        + _from_events(span, wanted)
                        + resource,
                    )
                )
    return rows


def _from_events(span: Any, wanted: Callable[[str], bool]) -> list[dict[str, Any]]:
    """What a span's events say, as attributes after the span's own: a Monocle span's type,
    data events and entities (`storage.spans.monocle`: its `otlp` exporter sends its spans as
    its file exporter writes them, inputs and outputs in events), or the GenAI content events
    (`storage.spans.genai_events`: Strands Agents, the conventions before 1.37)."""
    monocle = any(item.key == "span.type" for item in span.attributes)
    if not monocle and not any(event.name in EVENT_NAMES for event in span.events):
        return []
    given = {item.key: _python(item.value) for item in span.attributes}
    events = [
        {"name": event.name, "attributes": {i.key: _python(i.value) for i in event.attributes}}
        for event in span.events
    ]
    found = span_event_attributes(given, events)
    return [{"key": key, "value": text} for key, text in found if wanted(key)]


def _attributes(items: Iterable[Any], wanted: Callable[[str], bool]) -> list[dict[str, Any]]:
    return [
        {"key": item.key, "value": any_value_text(item.value)} for item in items if wanted(item.key)
    ]


def rows_frame(rows: list[tuple[Any, ...]]) -> pl.DataFrame:
    """Span rows (tuples in `RAW_SPAN_SCHEMA` order) as a frame."""
    return pl.DataFrame(rows, schema=RAW_SPAN_SCHEMA, orient="row")
