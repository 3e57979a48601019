"""Phoenix span tables (its spans dataframe, saved as Parquet or JSON Lines) to span rows.

Phoenix's `get_spans_dataframe` has one row per span: `context.trace_id`, `context.span_id`,
`parent_id`, `name`, `span_kind`, `start_time`, `end_time`, `status_code`, `status_message`,
`events`, and one `attributes.<key>` column per attribute, where OpenInference lists are lists
of objects (`attributes.llm.output_messages`: `[{"message.role": ..., "message.content": ...}]`)
and other dotted keys are nested objects (`attributes.gen_ai`: `{"operation": {"name": ...}}`).
`phoenix_rows` flattens them back into the attribute keys the spans were recorded with.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from storage.spans.genai_events import span_event_attributes

__all__ = [
    "PHOENIX_COLUMNS",
    "flat_pairs",
    "page_spans",
    "parquet_row",
    "sdk_time",
    "top_rows_given",
    "phoenix_rows",
    "hex_id",
    "span_rows",
]

PHOENIX_COLUMNS = ("context.trace_id", "context.span_id")
"""Columns every Phoenix span table has; a table or line without them is not one."""

_JSON_STRING_ATTRIBUTES = ("tool.parameters", "metadata", "llm.prompt_template.variables")
_STATUS = {"OK": "OK", "ERROR": "ERROR", "UNSET": "UNSET"}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def is_phoenix_row(value: object) -> bool:
    """True for a JSON object that looks like a row of a Phoenix spans table."""
    return isinstance(value, dict) and all(column in value for column in PHOENIX_COLUMNS)


def _no_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _no_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_no_nulls(item) for item in value]
    return value


def parquet_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row of a Phoenix span table read from Parquet, its JSON attributes (`tool.parameters`,
    `metadata`, ...) as their spans held them. Phoenix's dataframe holds those as parsed
    objects, and Parquet stores a column of objects as one struct with every key any row had,
    so a tool's arguments come back with the other tools' keys as nulls: members that are null
    are dropped (an argument that was null itself is then absent, which Parquet cannot tell
    apart)."""
    for column, value in row.items():
        if isinstance(value, dict | list) and column.endswith(_JSON_STRING_ATTRIBUTES):
            row[column] = _no_nulls(value)
    return row


def _sdk_id(value: Any, size: int) -> Any:
    """An SDK id as hex text: 0x-hex as written, or the integer of a pydantic dump."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return f"{value:0{2 * size}x}"
    return value


def sdk_time(value: Any) -> Any:
    """An SDK time: ISO-8601 text as written, or integer Unix nanoseconds (as ISO text, to
    the microsecond, which is what the span rows keep)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (_EPOCH + timedelta(microseconds=value // 1000)).isoformat()
    return value


def _sdk_span_row(value: Mapping[str, Any]) -> dict[str, Any]:
    """One span as the OpenTelemetry SDK writes it (`ReadableSpan.to_json()`: `context` with
    `trace_id` and `span_id` in 0x-hex, `parent_id`, ISO-8601 times, `status.status_code`,
    flat `attributes`, and its `resource`; any-agent's pydantic dump of the same span has
    integer ids, a `parent` context and integer nanosecond times) as a Phoenix table row. The
    resource's attributes come after the span's own, so a key the span sets wins. Phoenix's
    REST API and client (`GET /v1/projects/{project}/spans`, `spans.get_spans`) write the same
    shape with the status as `status_code` and `status_message` and the OpenInference kind as
    `span_kind` beside the attributes, which no longer hold it."""
    context = value["context"]
    found = value.get("status")
    status: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    parent = value.get("parent")
    parent_id = parent.get("span_id") if isinstance(parent, Mapping) else value.get("parent_id")
    code = status.get("status_code") or value.get("status_code") or "UNSET"
    # the SDK's to_json() says `description`, Monocle's file exporter `message`
    said = status.get("description") or status.get("message")
    message = said if status else value.get("status_message")
    row: dict[str, Any] = {
        "context.trace_id": _sdk_id(context.get("trace_id"), 16),
        "context.span_id": _sdk_id(context.get("span_id"), 8),
        "parent_id": _sdk_id(parent_id, 8),
        "name": value.get("name"),
        "start_time": sdk_time(value.get("start_time")),
        "end_time": sdk_time(value.get("end_time")),
        "status_code": str(code).removeprefix("StatusCode.").upper(),
        "status_message": message,
        "events": value.get("events"),
        "span_kind": value.get("span_kind"),
    }
    resource = value.get("resource")
    resource_attributes = resource.get("attributes") if isinstance(resource, Mapping) else None
    for attributes in (value.get("attributes"), resource_attributes):
        for key, item in (attributes or {}).items() if isinstance(attributes, Mapping) else ():
            row.setdefault(f"attributes.{key}", item)
    return row


def _is_flat_span(value: object) -> bool:
    """A span with its ids at the top and a flat `attributes` object (`_flat_span_row`)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("trace_id"), str)
        and isinstance(value.get("span_id"), str)
        and isinstance(value.get("name"), str)
        and isinstance(value.get("attributes"), Mapping)
        and "start_time" in value
    )


def _flat_span_row(value: Mapping[str, Any]) -> dict[str, Any]:
    """One span with `trace_id`, `span_id` and `parent_span_id` (hex) at the top, Unix
    nanosecond (or ISO-8601) `start_time` and `end_time`, `status` with `code` and `message`,
    `span_events` and flat `attributes`, as a Phoenix table row: the shape Strands Evals
    (strands-agents/evals) keeps spans in, its fixtures being OpenInference instrumentations'
    in-memory spans (smolagents, the OpenAI Agents SDK) and its CloudWatch parser writing the
    same."""
    found = value.get("status")
    status: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    code = str(status.get("code") or status.get("status_code") or "UNSET")
    events = value.get("span_events", value.get("events"))
    row: dict[str, Any] = {
        "context.trace_id": value["trace_id"],
        "context.span_id": value["span_id"],
        "parent_id": value.get("parent_span_id"),
        "name": value["name"],
        "start_time": sdk_time(value.get("start_time")),
        "end_time": sdk_time(value.get("end_time")),
        "status_code": code.removeprefix("StatusCode.").removeprefix("STATUS_CODE_").upper(),
        "status_message": status.get("message") or status.get("description"),
        "events": events,
    }
    for key, item in value["attributes"].items():
        row[f"attributes.{key}"] = item
    return row


def _span_id(span: Any, key: str) -> Any:
    context = span.get(key) if isinstance(span, Mapping) else None
    return context.get("span_id") if isinstance(context, Mapping) else None


def agent_trace_spans(value: object) -> list[Any] | None:
    """The spans of an any-agent `AgentTrace` (`{"spans": [...], "final_output": ...}`), its
    `final_output` given as `gen_ai.output` (the answer) to its top span, the one whose parent
    is not in the trace (none, or a span another process recorded), where that span has none;
    None for anything else. An empty `final_output` (any-agent 0.2x wrote `{}` for a
    structured answer) says nothing: the spans then give the answer, as without one."""
    if not isinstance(value, dict) or not isinstance(value.get("spans"), list):
        return None
    spans = [dict(span) if isinstance(span, Mapping) else span for span in value["spans"]]
    final = value.get("final_output")
    ids = {_span_id(span, "context") for span in spans} - {None}
    for span in spans:
        attributes = span.get("attributes") if isinstance(span, dict) else None
        on_top = _span_id(span, "parent") not in ids
        if final not in (None, "", {}, []) and on_top and isinstance(attributes, Mapping):
            text = final if isinstance(final, str) else json.dumps(final, ensure_ascii=False)
            span["attributes"] = {"gen_ai.output": text, **attributes}
    return spans


def span_row(value: object) -> Mapping[str, Any] | None:
    """A JSON object as a Phoenix table row: a Phoenix row as it is, a span as the
    OpenTelemetry SDK writes it (`_sdk_span_row`) or with its ids at the top (`_flat_span_row`)
    converted; None for anything else."""
    if is_phoenix_row(value):
        return value  # type: ignore[return-value]
    if (
        isinstance(value, dict)
        and isinstance(value.get("context"), Mapping)
        and "span_id" in value["context"]
        and "trace_id" in value["context"]
    ):
        return _sdk_span_row(value)
    if _is_flat_span(value):
        return _flat_span_row(value)  # type: ignore[arg-type]
    return None


def top_rows_given(rows: list[dict[str, Any]], given: Any, got: Any) -> list[dict[str, Any]]:
    """The rows of one trace whose parent is not among them (its top spans), each given the
    trace's own input and output text (`given`, `got`, None for none) where it has none;
    for an export that keeps those on the trace rather than on a span (Langfuse, MLflow)."""
    ids = {row["context.span_id"] for row in rows}
    top = [row for row in rows if row["parent_id"] not in ids]
    for key, text in (("attributes.input.value", given), ("attributes.output.value", got)):
        if text is not None:
            for row in top:
                row.setdefault(key, text)
    return top


def page_spans(value: object) -> list[Any] | None:
    """The spans of a page of Phoenix's REST API (`{"data": [...], "next_cursor": ...}`, as
    `GET /v1/projects/{project}/spans` answers); None for anything else."""
    if isinstance(value, dict) and "next_cursor" in value and isinstance(value.get("data"), list):
        return value["data"]
    return None


def span_rows(value: object) -> list[Mapping[str, Any]] | None:
    """The span rows one JSON value holds: an any-agent trace's spans, a page of Phoenix's
    REST API, a Langfuse trace's observations or one row of a Langfuse blob export's
    observations (`storage.spans.langfuse`), an MLflow trace's spans or a page of MLflow's trace
    search (`storage.spans.mlflow`), a LangSmith run or a page of runs (`storage.spans.langsmith`),
    a trace of Opik's export or an Opik span (`storage.spans.opik`), a Weave call
    (`storage.spans.weave`), or one span
    (`span_row`); None when it is none of these, or a trace or page with an item that is not a
    span."""
    from storage.spans.langfuse import (
        blob_rows,
        is_blob_observation,
        is_langfuse_trace,
        langfuse_rows,
    )
    from storage.spans.langsmith import is_langsmith_run, langsmith_page, langsmith_row
    from storage.spans.mlflow import is_mlflow_trace, mlflow_page, mlflow_rows
    from storage.spans.opik import is_opik_span, is_opik_trace, opik_rows, opik_span_row
    from storage.spans.weave import is_weave_call, weave_row

    if is_weave_call(value):
        return [weave_row(value)]  # type: ignore[arg-type]
    if is_opik_trace(value):
        return list(opik_rows(value))  # type: ignore[arg-type]
    if is_opik_span(value):
        return [opik_span_row(value)]  # type: ignore[arg-type]
    if is_langsmith_run(value):
        return [langsmith_row(value)]  # type: ignore[arg-type]
    runs = langsmith_page(value)
    if runs is not None:
        return [langsmith_row(run) for run in runs]
    if is_langfuse_trace(value):
        return list(langfuse_rows(value))  # type: ignore[arg-type]
    if is_blob_observation(value):
        return list(blob_rows(value))  # type: ignore[arg-type]
    if is_mlflow_trace(value):
        return list(mlflow_rows(value))  # type: ignore[arg-type]
    traces = mlflow_page(value)
    if traces is not None:
        return [row for trace in traces for row in mlflow_rows(trace)]
    spans = agent_trace_spans(value)
    if spans is None:
        spans = page_spans(value)
    if spans is None:
        row = span_row(value)
        return None if row is None else [row]
    rows = [span_row(item) for item in spans]
    return None if any(row is None for row in rows) else [r for r in rows if r is not None]


def _is_mapping(value: Any) -> bool:
    """`isinstance(value, Mapping)`, a plain dict (what JSON and Parquet rows hold) answered
    without the ABC's check, which took a tenth of reading a Langfuse export's lines."""
    kind = type(value)
    return kind is dict or (kind not in _NOT_MAPPINGS and isinstance(value, Mapping))


_NOT_MAPPINGS = frozenset({str, int, float, bool, list, type(None)})


def _flat(prefix: str, value: Any, into: list[tuple[str, Any]]) -> None:
    """`value` under `prefix` as attribute key-value pairs, lists of objects indexed."""
    if value is None:
        return
    if prefix.endswith(_JSON_STRING_ATTRIBUTES) and isinstance(value, dict | list):
        into.append((prefix, json.dumps(value, ensure_ascii=False, separators=(",", ":"))))
    elif _is_mapping(value):
        for key, item in value.items():
            _flat(f"{prefix}.{key}", item, into)
    elif isinstance(value, list) and value and all(_is_mapping(item) for item in value):
        for index, item in enumerate(value):
            _flat(f"{prefix}.{index}", item, into)
    else:
        into.append((prefix, value))


def flat_pairs(key: str, value: Any) -> list[tuple[str, str]]:
    """`value` under attribute `key` as the key-value texts a span row keeps of it."""
    pairs: list[tuple[str, Any]] = []
    _flat(key, value, pairs)
    return [(name, _text(item)) for name, item in pairs]


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat()
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _nanoseconds(value: Any) -> int | None:
    """A span time: a timestamp, epoch milliseconds (pandas' JSON), or ISO-8601 text."""
    if isinstance(value, datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=UTC)
        delta = aware - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value * 1_000_000)
    if isinstance(value, str):
        try:
            return _nanoseconds(datetime.fromisoformat(value.strip().replace("Z", "+00:00")))
        except ValueError:
            return None
    return None


_HEX_DIGITS = re.compile(r"[0-9a-f]+")


def hex_id(value: Any, size: int) -> str | None:
    """An id of `size` bytes as lowercase hex (0x-prefixed or not, any case), else None."""
    text = value.strip().lower() if isinstance(value, str) else ""
    digits = text.removeprefix("0x")
    if len(digits) != 2 * size or not _HEX_DIGITS.fullmatch(digits):
        return None
    return digits


def _exception_message(events: Any) -> str | None:
    for event in events if isinstance(events, list) else []:
        if isinstance(event, Mapping) and event.get("name") == "exception":
            attributes = event.get("attributes")
            if isinstance(attributes, Mapping):
                message = attributes.get("exception.message")
                if message is None and isinstance(attributes.get("exception"), Mapping):
                    message = attributes["exception"].get("message")
                return None if message is None else _text(message)
    return None


def _attributes(row: Mapping[str, Any], wanted: Callable[[str], bool]) -> list[dict[str, str]]:
    own = {
        column.removeprefix("attributes."): value
        for column, value in row.items()
        if column.startswith("attributes.")
    }
    pairs: list[tuple[str, Any]] = []
    for key, value in own.items():
        _flat(key, value, pairs)
    if row.get("events") or own.get("span.type") is not None:
        pairs.extend(span_event_attributes(own, row.get("events")))
    attributes = [{"key": key, "value": _text(value)} for key, value in pairs if wanted(key)]
    kinds = {item["key"] for item in attributes}
    kind = row.get("span_kind")
    if "openinference.span.kind" not in kinds and isinstance(kind, str) and kind:
        attributes.append({"key": "openinference.span.kind", "value": kind})
    return attributes


def phoenix_rows(
    rows: Iterable[tuple[int, Mapping[str, Any]]], source: str, wanted: Callable[[str], bool]
) -> list[tuple[Any, ...]]:
    """Span rows (`RAW_SPAN_SCHEMA` order) of Phoenix table rows given with their numbers."""
    spans = []
    for number, row in rows:
        status = row.get("status_code")
        message = row.get("status_message")
        spans.append(
            (
                source,
                number,
                hex_id(row.get("context.trace_id"), 16),
                hex_id(row.get("context.span_id"), 8),
                hex_id(row.get("parent_id"), 8),
                row.get("name") if isinstance(row.get("name"), str) else None,
                _nanoseconds(row.get("start_time")),
                _nanoseconds(row.get("end_time")),
                _STATUS.get(status.upper(), "UNSET") if isinstance(status, str) else "UNSET",
                message if isinstance(message, str) and message else None,
                _exception_message(row.get("events")),
                _attributes(row, wanted),
            )
        )
    return spans
