"""OTLP JSON read a record at a time: one JSON line (or one whole-document file) through the
official protobuf parser into span rows, or into the rejection that says why it holds none,
never a silent drop. `storage.spans.otel_files` reads files with these in pieces."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from storage.errors import RecordRejected, UnrecognisedFile
from storage.inputs.json_values import parse_record
from storage.names import path_text
from storage.spans._otlp import request_rows, rows_frame
from storage.spans.phoenix import phoenix_rows, span_rows
from transforms.config.otel import OtelImportConfig
from transforms.otel import REJECTION_SCHEMA
from transforms.otel_spans import ATTRIBUTE_KEYS, ATTRIBUTE_PREFIXES

__all__ = [
    "SpanChunk",
    "document_chunk",
    "is_one_document",
    "key_check",
    "malformed",
    "parsed_line",
]


@dataclass
class SpanChunk:
    """Spans read from a piece of a file, with the records that could not be read."""

    spans: pl.DataFrame
    rejections: list[dict[str, Any]] = field(default_factory=list)
    records: int = 0


def key_check(config: OtelImportConfig) -> Callable[[str], bool]:
    exact = frozenset((*ATTRIBUTE_KEYS, *config.attribute_keys()))

    def wanted(key: str) -> bool:
        return key in exact or key.startswith(ATTRIBUTE_PREFIXES)

    return wanted


def malformed(
    source: str, number: int, reason: str, rule: str = "malformed_record"
) -> dict[str, Any]:
    return dict.fromkeys(REJECTION_SCHEMA) | {
        "source_file": source,
        "record_number": number,
        "rule": rule,
        "reason": reason,
    }


def _no_spans(source: str, number: int, value: dict[str, Any]) -> dict[str, Any]:
    """The rejection of a JSON line that parsed and holds no span: never dropped silently."""
    keys = ", ".join(list(value)[:6]) + (", ..." if len(value) > 6 else "")
    if "context" in value and "attributes" in value:
        what = (
            "it looks like one span as the OpenTelemetry SDK writes it (span.to_json()), which "
            "is not an OTLP request"
        )
    else:
        what = "an OTLP ExportTraceServiceRequest holds its spans under resourceSpans"
    reason = f"line {number} holds no span (its keys: {keys or 'none'}); {what}"
    return malformed(source, number, reason, "no_spans")


def _with_base64_ids(request: Any) -> None:
    """Turn the hex ids of OTLP JSON into the base64 the protobuf JSON mapping reads."""
    for resource_spans in _objects(request, "resourceSpans", "resource_spans"):
        for scope_spans in _objects(resource_spans, "scopeSpans", "scope_spans"):
            for span in _objects(scope_spans, "spans"):
                for key in (
                    "traceId",
                    "trace_id",
                    "spanId",
                    "span_id",
                    "parentSpanId",
                    "parent_span_id",
                ):
                    text = span.get(key)
                    if isinstance(text, str) and len(text) in (16, 32):
                        with contextlib.suppress(ValueError):
                            span[key] = base64.b64encode(bytes.fromhex(text)).decode("ascii")


def _objects(parent: Any, *keys: str) -> list[dict[str, Any]]:
    for key in keys:
        value = parent.get(key) if isinstance(parent, dict) else None
        if isinstance(value, list):
            return [item for item in value if isinstance(item, dict)]
    return []


def parsed_line(
    text: str, number: int, source: str, wanted: Callable[[str], bool]
) -> tuple[list[Any], dict[str, Any] | None]:
    """One JSON line through the official parser: its span rows, or its rejection."""
    try:
        value = parse_record(text, f"line {number}")
    except RecordRejected as problem:
        return [], malformed(source, number, problem.reason)
    return _parsed_value(value, number, source, wanted)


def _parsed_value(
    value: Any, number: int, source: str, wanted: Callable[[str], bool]
) -> tuple[list[Any], dict[str, Any] | None]:
    """One parsed JSON record (line `number`) as an OTLP request: its span rows, or its
    rejection."""
    if not isinstance(value, dict):
        return [], malformed(
            source,
            number,
            f"line {number} is a JSON {type(value).__name__}, not an ExportTraceServiceRequest object",
        )
    _with_base64_ids(value)
    request = ExportTraceServiceRequest()
    try:
        json_format.ParseDict(value, request, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError) as exc:
        reason = f"line {number} is not an OTLP ExportTraceServiceRequest ({exc}); re-export it with the Collector's file exporter"
        return [], malformed(source, number, reason)
    rows = request_rows(request, wanted, source, number)
    return rows, None if rows else _no_spans(source, number, value)


_DOCUMENT_BYTES = 256 << 20
"""A JSON file up to this size that is one document (not JSON lines) is parsed whole."""


_FIRST_LINE_BYTES = 64 << 20
"""How far the first line of a JSON file is read to tell JSON lines from one document."""


def is_one_document(path: Path) -> bool:
    """The file is one JSON document (an array, or an object over several lines), not JSON
    lines: read line by line, a pretty-printed file was hundreds of malformed lines. The
    first line is read whole, however long: a Collector file's line holds a whole export
    request (512 spans of an SDK batch, half a megabyte and more), and a line cut at the
    first 64 KiB was taken for a document and the file refused."""
    with path.open("rb") as handle:
        head = handle.read(1 << 16).lstrip(b"\xef\xbb\xbf \t\r\n")
        if head.startswith(b"["):
            return True
        if not head.startswith(b"{"):
            return False
        while b"\n" not in head and len(head) < _FIRST_LINE_BYTES:
            more = handle.read(1 << 20)
            if not more:
                break
            head += more
    first = head.split(b"\n", 1)[0].strip()
    try:
        parse_record(first.decode("utf-8", errors="replace"), "line 1")
    except RecordRejected:
        return True  # an object that does not end on its first line
    return False


def document_chunk(path: Path, config: OtelImportConfig) -> SpanChunk:
    """A whole-document JSON file: one OTLP request object, or an array of them; one trace of
    spans (any-agent's, a Langfuse trace with its observations) or an array of spans or of
    such traces. Anything else is not a span file, and the file is refused with what it
    holds instead of a rejection per line."""
    from storage.inputs.sniff import describe_json

    size = path.stat().st_size
    source, wanted = path_text(path), key_check(config)
    if size > _DOCUMENT_BYTES:
        raise UnrecognisedFile(
            f"{path} is one JSON document of {size:,} bytes, over the {_DOCUMENT_BYTES:,} a "
            "span file may be; export OTLP JSON lines (one request a line) instead"
        )
    try:
        value = parse_record(path.read_bytes().decode("utf-8-sig", errors="replace"), "the file")
    except RecordRejected as unreadable:
        raise UnrecognisedFile(
            f"{path} is neither JSON lines nor one JSON document: {unreadable.reason}"
        ) from None
    if isinstance(value, list):
        requests, found = value, [span_rows(item) for item in value]
    else:  # one trace of spans (any-agent's, Langfuse's) or one span: numbered in order
        whole = span_rows(value)
        if whole:
            numbered = list(enumerate(whole, start=1))
            return SpanChunk(rows_frame(phoenix_rows(numbered, source, wanted)), records=len(whole))
        requests, found = [value], [whole]
    if requests and all(found):  # spans, or traces of spans, each with at least one span
        numbered = [
            (number, row) for number, rows in enumerate(found, start=1) for row in rows or ()
        ]
        return SpanChunk(rows_frame(phoenix_rows(numbered, source, wanted)), records=len(found))
    if not requests or not all(
        isinstance(r, dict) and ("resourceSpans" in r or "resource_spans" in r) for r in requests
    ):
        raise UnrecognisedFile(
            f"{path} holds {describe_json(value)}, not OTLP spans (an ExportTraceServiceRequest "
            "with resourceSpans, or an array of them) nor a list of spans (Phoenix rows, "
            "spans as the OpenTelemetry SDK writes them, or with trace_id and span_id at the "
            "top) nor Langfuse traces with their observations"
        )
    rows: list[Any] = []
    chunk = SpanChunk(rows_frame([]), records=len(requests))
    for number, request in enumerate(requests, start=1):
        parsed, problem = _parsed_value(request, number, source, wanted)
        rows.extend(parsed)
        if problem is not None:
            chunk.rejections.append(problem)
    chunk.spans = rows_frame(rows)
    return chunk
