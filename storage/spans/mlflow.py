"""MLflow traces to span rows: a trace as MLflow hands it out.

`Trace.to_json()` (what `mlflow.search_traces(return_type="list")` and `mlflow.get_trace` give)
is `{"info": {...}, "data": {"spans": [...]}}`; the tracking store keeps a trace's span data as
`{"spans": [...]}` (its `traces.json` artifact). A file holds one, an array of them, or one a
line. MLflow 3 writes each span as OTLP's JSON with protobuf's field names: base64 `trace_id`,
`span_id` and `parent_span_id`, `start_time_unix_nano`, `status.code` (`STATUS_CODE_ERROR`);
MLflow 2 as the OpenTelemetry SDK does (`context` with 0x-hex ids, `parent_id`, nanosecond
`start_time`, `status_code`). Every attribute value is JSON text (a string quoted).

Each span becomes one Phoenix table row (`storage.spans.phoenix`), so the OTel mapping reads it as it
reads any span: the attributes decoded once; `mlflow.spanType` as the span kind (LLM and
CHAT_MODEL a model call, TOOL, AGENT, CHAIN, RETRIEVER); a model call's `mlflow.spanInputs` (the
request, with its messages) and `mlflow.spanOutputs` (the completion: each choice's message) as
`gen_ai.input.messages` and `gen_ai.output.messages`; a tool span's name as its tool and its
inputs as the arguments; other spans' inputs and outputs as `input.value` and `output.value`.
The trace's own inputs and outputs (`info.trace_metadata`) go to its top spans that have none.
Not read: assessments (feedback and expectations), tags, token usage (docs/import.md).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from storage.spans._messages import decoded, message_fields, text_of
from storage.spans.phoenix import hex_id, sdk_time, top_rows_given

__all__ = ["is_mlflow_trace", "mlflow_page", "mlflow_rows", "mlflow_spans"]

_KINDS = {kind: kind for kind in ("LLM", "TOOL", "AGENT", "CHAIN", "RETRIEVER", "EMBEDDING")}
_KINDS["CHAT_MODEL"] = "LLM"
"""MLflow span types as OpenInference span kinds; PARSER, RERANKER and UNKNOWN say nothing."""

_STATUS = {"STATUS_CODE_OK": "OK", "STATUS_CODE_ERROR": "ERROR", "OK": "OK", "ERROR": "ERROR"}


def mlflow_spans(value: object) -> list[Any] | None:
    """The spans of an MLflow trace (`data.spans` of `Trace.to_json()`, or the store's
    `{"spans": [...]}` whose first span is MLflow's); None for anything else."""
    if not isinstance(value, Mapping):
        return None
    data = value.get("data")
    if isinstance(value.get("info"), Mapping) and isinstance(data, Mapping):
        spans = data.get("spans")
        return spans if isinstance(spans, list) else None
    spans = value.get("spans")
    if isinstance(spans, list) and spans and isinstance(spans[0], Mapping):
        first = spans[0]
        attributes = first.get("attributes")
        if "start_time_unix_nano" in first or (
            isinstance(attributes, Mapping) and "mlflow.spanType" in attributes
        ):
            return spans
    return None


def mlflow_page(value: object) -> list[Any] | None:
    """The traces of a page of MLflow's trace search (`{"traces": [...], "next_page_token":
    ...}`, as `mlflow traces search --output json` prints it) when each is an MLflow trace;
    None for anything else."""
    if not isinstance(value, Mapping) or "next_page_token" not in value:
        return None
    traces = value.get("traces")
    if not isinstance(traces, list) or not all(is_mlflow_trace(trace) for trace in traces):
        return None
    return traces


def is_mlflow_trace(value: object) -> bool:
    """True for an MLflow trace (`Trace.to_json()`, or the store's `{"spans": [...]}` of MLflow
    spans) whose spans are all objects."""
    spans = mlflow_spans(value)
    return spans is not None and all(isinstance(span, Mapping) for span in spans)


def _id(value: Any, size: int) -> str | None:
    """An id as hex: hex (0x-prefixed or not) as it is, base64 (protobuf's JSON) decoded."""
    found = hex_id(value, size)
    if found is not None or not isinstance(value, str):
        return found
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw.hex() if len(raw) == size else None


def _row(span: Mapping[str, Any]) -> dict[str, Any]:
    found_context, found_status = span.get("context"), span.get("status")
    context: Mapping[str, Any] = found_context if isinstance(found_context, Mapping) else span
    status: Mapping[str, Any] = found_status if isinstance(found_status, Mapping) else {}
    code = status.get("code") or span.get("status_code") or "UNSET"
    found = span.get("attributes")
    attributes = {
        key: decoded(item) for key, item in (found.items() if isinstance(found, Mapping) else ())
    }
    name = span.get("name")
    kind = _KINDS.get(str(attributes.get("mlflow.spanType") or "").upper())
    given, got = (
        attributes.pop("mlflow.spanInputs", None),
        attributes.pop("mlflow.spanOutputs", None),
    )
    row: dict[str, Any] = {
        "context.trace_id": _id(context.get("trace_id"), 16),
        "context.span_id": _id(context.get("span_id"), 8),
        "parent_id": _id(span.get("parent_span_id") or span.get("parent_id"), 8),
        "name": name,
        "start_time": sdk_time(span.get("start_time_unix_nano") or span.get("start_time")),
        "end_time": sdk_time(span.get("end_time_unix_nano") or span.get("end_time")),
        "status_code": _STATUS.get(str(code).upper(), "UNSET"),
        "status_message": status.get("message") or span.get("status_message") or None,
        "events": span.get("events"),
        "span_kind": kind,
    }
    fields: dict[str, Any] = {}
    if kind == "LLM":
        fields.update(message_fields(given, got))
    elif kind == "TOOL":
        fields["tool.name"] = name
        fields["tool.parameters"] = text_of(given)
    fields.setdefault("input.value", text_of(given))
    fields.setdefault("output.value", text_of(got))
    for key, item in (*fields.items(), *attributes.items()):
        if item is not None:
            row.setdefault(f"attributes.{key}", item)
    return row


def mlflow_rows(value: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Phoenix rows of an MLflow trace's spans (`is_mlflow_trace`), in its order; the
    trace's inputs and outputs on its top spans that have none."""
    rows = [_row(span) for span in mlflow_spans(value) or []]
    info = value.get("info")
    metadata = info.get("trace_metadata") if isinstance(info, Mapping) else None
    if isinstance(metadata, Mapping):
        given, got = metadata.get("mlflow.traceInputs"), metadata.get("mlflow.traceOutputs")
        top_rows_given(rows, text_of(given), text_of(got))
    return rows
