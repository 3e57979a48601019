"""One JSON record of a span file read as an OTLP `ExportTraceServiceRequest` by the official
protobuf parser: its span rows, or the rejection that says why it holds none (`malformed`).
What `storage.spans.otel_files` falls back to for a line Arrow cannot take and for a
whole-document file.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from storage.errors import RecordRejected
from storage.inputs.json_values import parse_record
from storage.spans._otlp import request_rows
from storage.spans.backend_exports import otlp_request
from storage.spans.otlp_logs import is_logs_only
from transforms.otel import REJECTION_SCHEMA

__all__ = ["malformed", "parsed_line", "parsed_value"]


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
    # Tempo's and Jaeger's exports (a document is turned into its request by `storage.spans.otel_files.document_chunk`)
    return parsed_value(otlp_request(value), number, source, wanted)


def parsed_value(
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
    if not rows and is_logs_only(value):
        return [], None  # log records: read with the spans they name (`otlp_logs`)
    return rows, None if rows else _no_spans(source, number, value)
