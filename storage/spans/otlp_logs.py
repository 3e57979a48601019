"""GenAI content kept in OpenTelemetry log records, read onto the spans they name.

The GenAI conventions let an instrumentation keep a call's messages out of its spans and send
them as events, which the SDKs send as log records (`resourceLogs`) carrying the trace and span
id of the call: Google ADK with `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=EVENT_ONLY`
(`gen_ai.client.inference.operation.details`, its `gen_ai.input.messages` and
`gen_ai.output.messages` as structured values), the OpenAI v2 and google-genai instrumentations
(`gen_ai.user.message`, `gen_ai.choice`, ..., the content in the record's body). A file that
holds such records beside the spans (the Collector's file exporter written by both pipelines,
one OTLP document with both, as agentevals keeps them) is read here first: each record a span
event of the span it names, which `storage.spans.genai_events` reads as it reads span events.
Records that name no span, or a span the file does not hold, and records of other events are
not read (a log is no span).
"""

from __future__ import annotations

import json
import mmap
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from storage.spans.genai_events import EVENT_NAMES, span_event_attributes

__all__ = ["FileLogs", "file_log_events", "is_logs_only", "starts_with_logs", "with_log_events"]

LogEvents = dict[tuple[str, str], list[dict[str, Any]]]
"""Per (trace id, span id) in lowercase hex: the span's content events from log records, in
time order (`{"name": ..., "attributes": {...}}`)."""

_MARK = b'"resourceLogs"'
_SPAN_ID = re.compile(rb'"spanId"\s*:\s*"([0-9A-Fa-f]{16})"')


@dataclass(frozen=True)
class FileLogs:
    """What a file's log records say: the content events by span, and per record (line
    number) whose events name a span the file does not hold, the number of such events."""

    events: LogEvents = field(default_factory=dict)
    unread: dict[int, int] = field(default_factory=dict)
    given: int = 0
    """Events of the file's own records that name a span of the files read together."""


def is_logs_only(value: Any) -> bool:
    """True for an OTLP JSON record of log records and no spans (read by `file_log_events`)."""
    return isinstance(value, dict) and "resourceLogs" in value and "resourceSpans" not in value


def _value(value: Any) -> Any:
    """An OTLP JSON AnyValue as Python: an int's text as the int, arrays and key-value lists
    as lists and dicts."""
    if not isinstance(value, dict) or not value:
        return None
    kind, item = next(iter(value.items()))
    if kind == "intValue":
        return (
            int(item) if isinstance(item, str | int) and str(item).lstrip("-").isdigit() else item
        )
    if kind == "arrayValue":
        return [_value(v) for v in (item or {}).get("values") or []]
    if kind == "kvlistValue":
        return {p.get("key"): _value(p.get("value")) for p in (item or {}).get("values") or []}
    return item


def _records(value: Any) -> Iterator[dict[str, Any]]:
    for resource in value.get("resourceLogs") or [] if isinstance(value, dict) else []:
        for scope in resource.get("scopeLogs") or [] if isinstance(resource, dict) else []:
            for record in scope.get("logRecords") or [] if isinstance(scope, dict) else []:
                if isinstance(record, dict):
                    yield record


def _event(record: dict[str, Any]) -> tuple[tuple[str, str], int, dict[str, Any]] | None:
    """A content event of a log record: its span's ids, its time and the event; None for a
    record of another event or one that names no span."""
    attributes = {
        item.get("key"): _value(item.get("value"))
        for item in record.get("attributes") or []
        if isinstance(item, dict)
    }
    name = record.get("eventName") or attributes.get("event.name")
    trace, span = record.get("traceId"), record.get("spanId")
    if name not in EVENT_NAMES or not isinstance(trace, str) or not isinstance(span, str):
        return None
    if not trace.strip("0") or not span.strip("0"):
        return None
    body = _value(record.get("body"))
    if isinstance(body, dict):  # the older conventions: the content in the body
        attributes = {**body, **attributes}
    texts = {
        key: item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
        for key, item in attributes.items()
        if item is not None
    }
    time = record.get("timeUnixNano") or record.get("observedTimeUnixNano") or 0
    return (trace.lower(), span.lower()), int(time), {"name": name, "attributes": texts}


_HEAD_BYTES = 4 << 20


def starts_with_logs(path: Path) -> bool:
    """Whether the first 4 MiB of the file hold a log record (`resourceLogs`): where the
    Collector's logs pipeline writes, its first lines do."""
    try:
        with path.open("rb") as handle:
            return _MARK in handle.read(_HEAD_BYTES)
    except OSError:
        return False


def _span_ids(value: Any) -> set[str]:
    """The span ids of an OTLP JSON document's spans, in lowercase hex."""
    found: set[str] = set()
    for resource in value.get("resourceSpans") or [] if isinstance(value, dict) else []:
        for scope in resource.get("scopeSpans") or [] if isinstance(resource, dict) else []:
            for span in scope.get("spans") or [] if isinstance(scope, dict) else []:
                if isinstance(span, dict) and isinstance(span.get("spanId"), str):
                    found.add(span["spanId"].lower())
    return found


@contextmanager
def _mapped(path: Path) -> Iterator[mmap.mmap | bytes]:
    """The file's bytes, mapped (an empty file, which cannot be mapped, as no bytes)."""
    with path.open("rb") as handle:
        try:
            view = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file
            yield b""
            return
        with view:
            yield view


def _file_records(path: Path, one_document: bool) -> tuple[list[tuple[int, Any]], set[str]]:
    """The records of the JSON file `path` that hold log records (by line number), and the
    span ids of its spans; nothing, at the cost of a byte search, for a file with no log."""
    with _mapped(path) as data:
        if data.find(_MARK) < 0:
            return [], set()
    numbered: list[tuple[int, Any]] = []
    spans: set[str] = set()
    if one_document:
        found: Any = json.loads(path.read_bytes().decode("utf-8-sig"))
        numbered = [(1, value) for value in (found if isinstance(found, list) else [found])]
        for _, value in numbered:
            spans |= _span_ids(value)
    else:
        with path.open("rb") as handle:
            for number, line in enumerate(handle, 1):
                if _MARK in line:
                    numbered.append((number, json.loads(line)))
                    spans |= _span_ids(numbered[-1][1])  # a request may hold both
                else:
                    spans.update(m.group(1).decode().lower() for m in _SPAN_ID.finditer(line))
    return numbered, spans


def _file_span_ids(path: Path) -> set[str]:
    """The span ids a file of spans names (its spans' own, and their links'), in lowercase hex."""
    with _mapped(path) as data:
        return {m.group(1).decode().lower() for m in _SPAN_ID.finditer(data)}


def file_log_events(files: Sequence[tuple[Path, bool]]) -> dict[Path, FileLogs]:
    """The content events of the log records in the JSON files (each with whether it is one
    OTLP document with `resourceLogs`, or JSON lines of which some are), by the span each
    names, shared by the files read together (`tracegrade import otel` over a folder: a
    record's span may be in another of them), and per file its records whose events name a
    span none of the files holds; none for files that are not JSON as a whole or cannot be
    read (their span reader says why, record by record)."""
    try:
        read = [(path, *_file_records(path, one)) for path, one in files]
    except (ValueError, UnicodeDecodeError, OSError):
        return {}
    if not any(numbered for _, numbered, _ in read):
        return {}
    spans: set[str] = set()
    for path, numbered, found in read:
        # a file with no log record was not searched for span ids: searched now
        spans |= found if numbered else _file_span_ids(path)
    timed: dict[tuple[str, str], list[tuple[int, dict[str, Any]]]] = {}
    unread: dict[Path, dict[int, int]] = {}
    given: dict[Path, int] = {}
    for path, numbered, _ in read:
        for number, value in numbered:
            for record in _records(value):
                event = _event(record)
                if event is None:
                    continue
                if event[0][1] not in spans:
                    counts = unread.setdefault(path, {})
                    counts[number] = counts.get(number, 0) + 1
                    continue
                timed.setdefault(event[0], []).append(event[1:])
                given[path] = given.get(path, 0) + 1
    events = {
        ids: [e for _, e in sorted(items, key=lambda t: t[0])] for ids, items in timed.items()
    }
    return {path: FileLogs(events, unread.get(path, {}), given.get(path, 0)) for path, _, _ in read}


def with_log_events(
    spans: pl.DataFrame, events: LogEvents, wanted: Callable[[str], bool]
) -> pl.DataFrame:
    """`spans` (span rows) with what the log records' events of each say, as attributes after
    the span's own (a key the span sets itself is kept)."""
    if not events or spans.is_empty():
        return spans
    pairs = spans.select("trace_hex", "span_hex").rows()
    hit = [index for index, pair in enumerate(pairs) if pair in events]
    if not hit:
        return spans
    rows = spans["attributes"].to_list()
    for index in hit:
        own = rows[index] or []
        given = {item["key"]: item["value"] for item in own}
        found = span_event_attributes(given, events[pairs[index]])
        rows[index] = own + [{"key": k, "value": v} for k, v in found if wanted(k)]
    traces = {pairs[index][0] for index in hit}
    starts = spans["start_ns"].to_list()
    for trace in traces:
        ours = sorted(
            (i for i, pair in enumerate(pairs) if pair[0] == trace), key=lambda i: starts[i] or 0
        )
        _tool_contents([rows[i] for i in ours], wanted)
    return spans.with_columns(pl.Series("attributes", rows, dtype=spans.schema["attributes"]))


def _conversation(rows: list[list[dict[str, Any]]]) -> list[Any]:
    """The messages of the trace's model calls as one conversation: the longest input a call
    was sent (each repeats the history before it), then that call's output."""
    longest: list[Any] = []
    for own in rows:
        given = {item["key"]: item["value"] for item in own}
        try:
            asked = json.loads(given.get("gen_ai.input.messages") or "[]")
            said = json.loads(given.get("gen_ai.output.messages") or "[]")
        except ValueError:
            continue
        if isinstance(asked, list) and isinstance(said, list) and len(asked) >= len(longest):
            longest = asked + said
    return longest


_TOOL_INPUTS = (
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.args",
    "gcp.vertex.agent.tool_call_args",
    "ai.toolCall.args",
    "input.value",
    "traceloop.entity.input",
    "haystack.agent.step.tool.input",
)
_TOOL_OUTPUTS = (
    "gen_ai.tool.call.result",
    "ai.toolCall.result",
    "output.value",
    "gen_ai.output",
    "gcp.vertex.agent.tool_response",
    "traceloop.entity.output",
    "haystack.agent.step.tool.output",
)
"""The keys a tool span's arguments and result are read from (`transforms.otel_spans`)."""


def _says(given: dict[str, Any], keys: tuple[str, ...]) -> bool:
    """Whether the span says something under one of `keys` (ADK writes `{}` for nothing)."""
    return any(given.get(key) not in (None, "", "{}", "null") for key in keys)


def _tool_contents(rows: list[list[dict[str, Any]]], wanted: Callable[[str], bool]) -> None:
    """Each `execute_tool` span of the trace (its attribute rows, in start order) that says no
    arguments or no result of its own given those of the call of its tool the model asked for
    (its `tool_call` parts: the one of the span's call id, else the first of its tool's name
    not yet given) and the result the model was sent back (the `tool_call_response` parts of
    the next message, in order): where content is only in the model calls' log records, a
    tool span holds neither (ADK's ids do not pair the two). A span's own arguments and result
    are kept (kagent's Go ADK writes them beside records of elided content)."""
    calls: list[tuple[str, Any, Any, Any]] = []
    waiting: list[int] = []
    for message in _conversation(rows):
        parts = message.get("parts") if isinstance(message, dict) else None
        for part in parts if isinstance(parts, list) else []:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "tool_call":
                waiting.append(len(calls))
                calls.append((str(part.get("name")), part.get("id"), part.get("arguments"), None))
            elif part.get("type") == "tool_call_response" and waiting:
                name, ids, arguments, _ = calls[waiting[0]]
                calls[waiting.pop(0)] = (name, ids, arguments, part.get("response"))
    for own in rows:
        given = {item["key"]: item["value"] for item in own}
        if given.get("gen_ai.operation.name") != "execute_tool":
            continue
        tool, called = given.get("gen_ai.tool.name"), given.get("gen_ai.tool.call.id")
        index = next((i for i, call in enumerate(calls) if called and call[1] == called), None)
        if index is None:
            index = next((i for i, call in enumerate(calls) if call[0] == tool), None)
        if index is None:
            continue
        _, _, arguments, result = calls.pop(index)
        for key, value, keys in (
            ("gen_ai.tool.call.arguments", arguments, _TOOL_INPUTS),
            ("gen_ai.tool.call.result", result, _TOOL_OUTPUTS),
        ):
            if not _says(given, keys) and value is not None and wanted(key):
                text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                own.append({"key": key, "value": text})
