"""OpenTelemetry span files in, span rows out, a piece at a time.

Three kinds of file hold spans: OTLP JSON lines (the Collector's file exporter: one
`ExportTraceServiceRequest` a line), OTLP protobuf (the file exporter's `proto` format, framed
as `storage.spans._otlp_frames` reads it), and Phoenix span tables (Parquet, or JSON Lines of its
spans dataframe). `iter_span_chunks` reads any of them in pieces of bounded size and never
stops at a bad record: a line or message that cannot be parsed becomes a `malformed_record`
rejection and the file goes on. A file that cannot be read at all raises `InputError`.
A chunk of JSON lines is read column-wise by Arrow (`storage.spans._otlp_arrow`) when it can
be; otherwise, and for a whole-document file, each record goes through the official protobuf
parser on its own (`storage.spans._otlp_records`), into its span rows or the rejection that
says why it holds none.
docs/import.md describes the formats.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.json as pa_json
import pyarrow.parquet as pq
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from storage.errors import InputError, RecordRejected, UnrecognisedFile
from storage.inputs.input_paths import OTEL_EXTENSIONS, PARQUET_EXTENSIONS, expand_paths
from storage.inputs.json_values import cut_array, parse_record, parse_values
from storage.names import path_text
from storage.spans._langfuse_lines import langfuse_block
from storage.spans._line_blocks import BlockBuffers, line_blocks, line_numbers
from storage.spans._otlp import collector_schema, request_rows, rows_frame
from storage.spans._otlp_arrow import arrow_rows
from storage.spans._otlp_frames import protobuf_messages
from storage.spans._otlp_records import malformed, parsed_line, parsed_value
from storage.spans.backend_exports import otlp_request
from storage.spans.langfuse import BLOB_COLUMNS, blob_rows
from storage.spans.monocle import with_request_data
from storage.spans.otlp_logs import FileLogs, file_log_events, with_log_events
from storage.spans.phoenix import PHOENIX_COLUMNS, parquet_row, phoenix_rows, span_rows
from storage.spans.weave import is_weave_call, with_weave_tools
from transforms.config.otel import OtelImportConfig
from transforms.otel_spans import (
    ATTRIBUTE_KEYS,
    ATTRIBUTE_PREFIXES,
    RAW_SPAN_SCHEMA,
    wanted_key_filter,
)

__all__ = [
    "OTEL_EXTENSIONS",
    "ChunkJob",
    "LineBlock",
    "SpanChunk",
    "chunk_jobs",
    "is_one_document",
    "iter_span_chunks",
    "key_check",
    "otel_input_files",
    "parsed_block",
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


def _several_documents(
    path: Path, text: str, unreadable: RecordRejected
) -> tuple[list[Any], str | None]:
    """The documents of a file that is not one JSON document, and why its end is not read
    (None when all of it is): JSON documents one after another (the OpenTelemetry SDK's
    `ConsoleSpanExporter` output saved from a terminal: each span pretty-printed), or an
    array cut off while it was written (its complete elements). Anything else refuses the
    file with what made the first reading fail."""
    if "Extra data" in unreadable.reason:
        try:
            values = parse_values(text, "the file")
        except RecordRejected as problem:
            unreadable = problem
        else:
            if len(values) > 1:
                return values, None
    else:
        try:
            cut = cut_array(text, "the file")
        except RecordRejected as problem:
            unreadable, cut = problem, None
        if cut is not None and cut[0]:
            return cut
    raise UnrecognisedFile(
        f"{path} is neither JSON lines nor one JSON document: {unreadable.reason}"
    ) from None


def document_chunk(path: Path, config: OtelImportConfig) -> SpanChunk:
    """A whole-document JSON file: one OTLP request object, or an array of them; one trace of
    spans (any-agent's, a Langfuse trace with its observations) or an array of spans or of
    such traces. Anything else is not a span file, and the file is refused with what it
    holds instead of a rejection per line; an array cut off while it was written gives its
    complete elements, and its tail is rejected with the reason."""
    size = path.stat().st_size
    source, wanted = path_text(path), key_check(config)
    if size > _DOCUMENT_BYTES:
        raise UnrecognisedFile(
            f"{path} is one JSON document of {size:,} bytes, over the {_DOCUMENT_BYTES:,} a "
            "span file may be; export OTLP JSON lines (one request a line) instead"
        )
    text = path.read_bytes().decode("utf-8-sig", errors="replace")
    cut = None
    try:
        value = parse_record(text, "the file")
    except RecordRejected as unreadable:
        value, cut = _several_documents(path, text, unreadable)
    chunk = _document_spans(path, value, source, wanted)
    if cut is not None:
        chunk.rejections.append(malformed(source, len(value) + 1, cut))
    return chunk


def _document_spans(
    path: Path, value: Any, source: str, wanted: Callable[[str], bool]
) -> SpanChunk:
    """The span rows of a parsed whole-document file (`document_chunk`)."""
    from storage.inputs.sniff import describe_json

    value = (
        [otlp_request(item) for item in value] if isinstance(value, list) else otlp_request(value)
    )
    if isinstance(value, list):
        requests, found = value, [span_rows(item) for item in value]
        with_weave_tools(_weave_rows(requests, found))
    else:  # one trace of spans (any-agent's, Langfuse's) or one span: numbered in order
        whole = span_rows(value)
        with_weave_tools(_weave_rows([value], [whole]))
        if whole:
            numbered = list(enumerate(whole, start=1))
            return SpanChunk(rows_frame(phoenix_rows(numbered, source, wanted)), records=len(whole))
        requests, found = [value], [whole]
    if requests and all(found):  # spans, or traces of spans, each with at least one span
        numbered = [
            (number, row) for number, rows in enumerate(found, start=1) for row in rows or ()
        ]
        given = with_request_data([row for _, row in numbered])  # Monocle's: a file a trace
        numbered = [(number, row) for (number, _), row in zip(numbered, given, strict=True)]
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
        parsed, problem = parsed_value(request, number, source, wanted)
        rows.extend(parsed)
        if problem is not None:
            chunk.rejections.append(problem)
    chunk.spans = rows_frame(rows)
    return chunk


CHUNK_BYTES = 8 << 20
"""About how many bytes of a file are read into one chunk of spans where its records become
Python objects: OTLP protobuf, Phoenix or Langfuse rows (where the column-wise reader cannot
take them). 32 MiB chunks of the Langfuse export of bench_otel_import.py read no faster and
went past 1 GiB at the peak (1,439 MiB)."""

JSON_LINES_CHUNK_BYTES = 32 << 20
"""About how many bytes of OTLP JSON lines (a Collector's file exporter) are read into one
chunk: Arrow's reader parses them, and each chunk's parsing and span facts cost a fixed 30-40
ms of Polars calls on top of its spans. 32 MiB chunks read the Collector files of
bench_otel_import.py with 9% less CPU than 8 MiB ones (22.9 against 25.2 CPU-s for a million
spans), for 60-75 MiB more at the peak (docs/performance.md)."""

_LINES = (".json", ".jsonl", ".ndjson")
_PHOENIX_BATCH_ROWS = 20_000
_BLOCK_BYTES = 4 << 20
_SCHEMAS = (collector_schema(False), collector_schema(True))


def otel_input_files(paths: Sequence[str | Path]) -> list[Path]:
    """The span files named by files, folders (recursive) and glob patterns, sorted.

    Raises:
        InputError: a path names no span file, or a file with another extension.
    """
    return expand_paths(paths, extensions=OTEL_EXTENSIONS, what="span files")


def _slow_chunk(
    lines: list[tuple[int, str]], source: str, wanted: Callable[[str], bool]
) -> SpanChunk:
    rows: list[Any] = []
    chunk = SpanChunk(rows_frame([]))
    for number, text in lines:
        found, problem = parsed_line(text, number, source, wanted)
        rows.extend(found)
        if problem is not None:
            chunk.rejections.append(problem)
    chunk.spans, chunk.records = rows_frame(rows), len(lines)
    return chunk


def _fast_chunk(
    data: bytearray, records: list[int], longest: int, source: str, config: OtelImportConfig
) -> pl.DataFrame | None:
    """The chunk's span rows through Arrow's JSON reader, or None when it cannot take them."""
    block = max(_BLOCK_BYTES, longest + 1)
    # One thread: the import reads files side by side (pipelines.otel_import.READERS).
    options = pa_json.ReadOptions(block_size=block, use_threads=False)
    for schema in _SCHEMAS:
        parse = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
        try:
            table = pa_json.read_json(
                pa.BufferReader(data), read_options=options, parse_options=parse
            )
        except pa.ArrowInvalid:
            continue
        if table.num_rows != len(records):
            return None
        return arrow_rows(table, records, source, lambda key: wanted_key_filter(key, config))
    return None


def _json_chunk(data: bytearray, first: int, path: Path, config: OtelImportConfig) -> SpanChunk:
    source = path_text(path)
    if not data.isascii():  # ASCII is UTF-8; only other bytes need the decoder's check
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = first + data.count(b"\n", 0, exc.start)
            raise InputError(
                f"{path} is not UTF-8 text (line {line}); re-export it as UTF-8"
            ) from None
    numbers, longest = line_numbers(data, first)
    if not numbers:
        return SpanChunk(rows_frame([]))
    # Arrow's reader refuses a lone surrogate escape (\ud800) anywhere in the chunk, so such
    # a chunk takes the full parser, which rejects that record with its reason; a surrogate
    # pair reads as its character in both
    spans = _fast_chunk(data, numbers, longest, source, config)
    # a line with no span takes the full parser, which says why (never a silent drop)
    if spans is not None and spans["record_number"].n_unique() == len(numbers):
        return SpanChunk(spans, records=len(numbers))
    text = data.decode("utf-8")
    lines = [(first + i, line) for i, line in enumerate(text.split("\n")) if line.strip()]
    return _slow_chunk(lines, source, key_check(config))


def _protobuf_chunks(path: Path, config: OtelImportConfig, size: int) -> Iterator[SpanChunk]:
    source, wanted = path_text(path), key_check(config)
    chunk, rows, used = SpanChunk(rows_frame([])), [], 0
    for number, body in protobuf_messages(path):
        chunk.records += 1
        if isinstance(body, str):
            chunk.rejections.append(
                malformed(source, number, body + "; the file was probably truncated")
            )
            continue
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except DecodeError as exc:
            chunk.rejections.append(
                malformed(
                    source,
                    number,
                    f"message {number} is not an OTLP ExportTraceServiceRequest ({exc})",
                )
            )
            continue
        rows.extend(request_rows(request, wanted, source, number))
        used += len(body)
        if used >= size:
            chunk.spans = rows_frame(rows)
            yield chunk
            chunk, rows, used = SpanChunk(rows_frame([])), [], 0
    chunk.spans = rows_frame(rows)
    yield chunk


def _phoenix_parquet(path: Path, config: OtelImportConfig) -> Iterator[SpanChunk]:
    source, wanted = path_text(path), key_check(config)
    try:
        table = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(
            f"{path} is not a readable Parquet file ({exc}); re-export the span table"
        ) from None
    names = set(table.schema_arrow.names)
    langfuse = names >= BLOB_COLUMNS  # a Langfuse blob export's observations table
    missing = [name for name in PHOENIX_COLUMNS if name not in names]
    if missing and not langfuse:
        raise InputError(
            f"{path} has no column {', '.join(missing)}: it is not a Phoenix span table "
            "(export it with px.Client().get_spans_dataframe(...).to_parquet(...)) nor a "
            "Langfuse blob export's observations (id, trace_id, type, start_time)"
        )
    offset = 0
    for batch in table.iter_batches(_PHOENIX_BATCH_ROWS):
        found = batch.to_pylist()
        if langfuse:
            rows = [span for row in found for span in blob_rows(row)]
        else:
            rows = [parquet_row(row) for row in found]
        numbered = zip(range(offset + 1, offset + len(rows) + 1), rows, strict=True)
        yield SpanChunk(rows_frame(phoenix_rows(numbered, source, wanted)), records=len(rows))
        offset += len(rows)


def _phoenix_block(data: bytearray, first: int, path: Path, config: OtelImportConfig) -> SpanChunk:
    """The span rows of one block of Phoenix or Langfuse lines (`_row_lines`)."""
    source, wanted = path_text(path), key_check(config)
    chunk = SpanChunk(rows_frame([]))
    text = _decoded(data, path)
    lines = [(first + i, line) for i, line in enumerate(text.split("\n")) if line.strip()]
    chunk.records = len(lines)
    taken, left = pl.DataFrame(schema=RAW_SPAN_SCHEMA), {number for number, _ in lines}
    if lines and '"observations"' in lines[0][1]:  # Langfuse traces: column-wise
        taken, left = langfuse_block(lines, source, lambda key: wanted_key_filter(key, config))
    good: list[tuple[int, Mapping[str, Any]]] = []
    weave: list[dict[str, Any]] = []  # the rows of Weave calls, given their tools at once
    for number, line in lines:
        if number not in left:
            continue
        try:
            value = parse_record(line, f"line {number}")
        except RecordRejected as problem:
            chunk.rejections.append(malformed(source, number, problem.reason))
            continue
        rows = span_rows(value)
        if not rows:
            chunk.rejections.append(
                malformed(
                    source,
                    number,
                    f"line {number} is neither a row of a Phoenix span table (it needs {' and '.join(PHOENIX_COLUMNS)}) nor a span as the OpenTelemetry SDK writes it (name, context) or with its ids at the top (trace_id, span_id, name, attributes), nor an any-agent trace of such spans, nor a Langfuse trace with its observations",
                )
            )
            continue
        if is_weave_call(value):
            weave.extend(rows)  # type: ignore[arg-type]
        good.extend((number, row) for row in rows)
    with_weave_tools(weave)
    read = rows_frame(phoenix_rows(good, source, wanted))
    chunk.spans = pl.concat([taken, read]).sort("record_number", maintain_order=True)
    return chunk


def _weave_rows(values: Sequence[Any], found: Sequence[Any]) -> list[dict[str, Any]]:
    """The rows of the Weave calls among `values` (each value's rows in `found`), for
    `with_weave_tools`: a call's trace may hold any of them."""
    return [
        row
        for value, got in zip(values, found, strict=True)
        if is_weave_call(value)
        for row in got or ()
    ]


def _decoded(data: bytearray, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text; re-export it as UTF-8") from None


def _row_lines(path: Path) -> tuple[bool, bool]:
    """Whether the first non-blank line is a span row (Phoenix's, the SDK's), an any-agent
    trace of them or a Langfuse trace, rather than an OTLP request; and whether such a file
    is read holding the GIL for much of its time (a large file's blocks are then parsed in
    worker processes): rows that are not Langfuse traces are read line by line in Python;
    Langfuse traces whose observations are large (`PYTHON_OBSERVATION_BYTES`: message
    histories, which the column-wise reader leaves to Python more often) are, for the most
    part, decoded and written in Python."""
    with path.open("rb") as handle:
        for raw in handle:
            line = raw.strip().removeprefix(b"\xef\xbb\xbf")
            if not line:
                continue
            if line.startswith(b'{"resourceSpans"') or b'"resourceSpans"' in line[:200]:
                return False, False
            text = line.decode("utf-8", "replace")
            try:
                value = parse_record(text, "line 1")
            except RecordRejected:
                return False, False
            rows = span_rows(value)
            if rows is None:
                return False, False
            langfuse = '"observations"' in text
            return True, not langfuse or len(line) > PYTHON_OBSERVATION_BYTES * len(rows)
    return False, False


PYTHON_OBSERVATION_BYTES = 2048
"""The average size of a Langfuse line's observations past which its file is read in
worker processes: real downloads (12 KB an observation) read there in 5.2 s a 300 MB file
against 7.5 s on threads; the bench's export (924 bytes) at 40,290 against 35,045 spans/s,
but with 1,408 MiB at the peak against 824 (docs/performance.md)."""


ChunkJob = Callable[[], Iterator[SpanChunk]]
"""A piece of reading that may run on any thread: it yields the chunks of one block of lines,
or of a whole file where a file is not read in blocks."""


def _job(read: Callable[[], Iterator[SpanChunk]], path: Path) -> ChunkJob:
    def run() -> Iterator[SpanChunk]:
        try:
            yield from read()
        except OSError as exc:
            raise InputError(
                f"cannot read {path} ({exc}); check the path and its permissions"
            ) from None

    return run


@dataclass(frozen=True)
class LineBlock:
    """A block of a file's lines, read and not yet parsed (a `ChunkJob`): OTLP requests, or
    `rows` (Phoenix or Langfuse rows). It pickles, so it can be parsed in another process:
    `python` says its lines are likely read one by one in Python (`_row_lines`), holding the
    GIL, where Arrow's and Polars' readers let go of it."""

    data: bytearray
    first: int
    path: Path
    config: OtelImportConfig
    rows: bool
    python: bool
    file_bytes: int

    def __call__(self) -> Iterator[SpanChunk]:
        parse = _phoenix_block if self.rows else _json_chunk
        yield parse(self.data, self.first, self.path, self.config)


def parsed_block(block: LineBlock) -> list[SpanChunk]:
    """The chunks of one block, as a worker process hands them back."""
    return list(block())


def chunk_jobs(
    path: Path,
    config: OtelImportConfig,
    chunk_bytes: int | None = None,
    logs: FileLogs | None = None,
    buffers: BlockBuffers | None = None,
) -> Iterator[ChunkJob]:
    """The reading of one file as jobs, in the file's order: one a block of about
    `chunk_bytes` of JSON lines (OTLP requests, Phoenix or Langfuse rows; None:
    JSON_LINES_CHUNK_BYTES or CHUNK_BYTES), whose bytes are read here and parsed when the
    job runs, so that blocks of one file can be parsed side by side; one job for a whole
    protobuf, Parquet or one-document file. `buffers`: the reading's block buffers, used
    again across its files.

    Raises:
        InputError: the file cannot be opened or read, is not UTF-8 (JSON), or is a Parquet
            file that is not a Phoenix span table (here or when a job runs).
    """
    suffix = path.suffix.lower()
    try:
        if suffix in PARQUET_EXTENSIONS:
            yield _job(lambda: _phoenix_parquet(path, config), path)
        elif suffix not in _LINES:
            messages = chunk_bytes or CHUNK_BYTES
            yield _job(lambda: _protobuf_chunks(path, config, messages), path)
        else:
            phoenix, python = _row_lines(path)
            one = not phoenix and is_one_document(path)
            if logs is None:  # read on its own: its log records name its own spans
                logs = (
                    FileLogs() if phoenix else file_log_events([(path, one)]).get(path, FileLogs())
                )
            if one:
                job = _job(lambda: iter((document_chunk(path, config),)), path)
                yield _with_events(job, logs, path, config)
                return
            block = chunk_bytes or (CHUNK_BYTES if phoenix else JSON_LINES_CHUNK_BYTES)
            size = path.stat().st_size
            for data, first in line_blocks(path, block, buffers):
                lines = LineBlock(data, first, path, config, phoenix, python, size)
                yield _with_events(lines, logs, path, config)
                logs = FileLogs(logs.events)  # the unread records said once, by the first job
    except OSError as exc:
        raise InputError(
            f"cannot read {path} ({exc}); check the path and its permissions"
        ) from None


def log_events(paths: Sequence[Path]) -> dict[Path, FileLogs]:
    """The GenAI content the OTLP log records of the JSON files among `paths` hold, read
    together (`storage.spans.otlp_logs`): a record's span may be in another of the files."""
    files = []
    for path in paths:
        if path.suffix.lower() in _LINES and not _row_lines(path)[0]:
            files.append((path, is_one_document(path)))
    return file_log_events(files)


def _with_events(job: ChunkJob, logs: FileLogs, path: Path, config: OtelImportConfig) -> ChunkJob:
    """`job` with the log records' content events put on the spans they name, and a rejection
    for each record whose events name no span of the file (never dropped in silence)."""
    if not logs.events and not logs.unread:
        return job
    wanted, source = key_check(config), path_text(path)
    unread = [
        malformed(
            source,
            number,
            f"line {number} holds OTLP log records with the GenAI content of {count} calls "
            "whose spans this file does not hold; tracegrade reads such records with the "
            "spans they name, in the same file or in a file read with it (`score` or "
            '`tracegrade import otel` over the folder; docs/import.md, "Content in span '
            'events")',
            "unread_log_records",
        )
        for number, count in sorted(logs.unread.items())
    ]

    def run() -> Iterator[SpanChunk]:
        for index, chunk in enumerate(job()):
            chunk.spans = with_log_events(chunk.spans, logs.events, wanted)
            if index == 0:
                chunk.rejections.extend(unread)
            yield chunk

    return run


def iter_span_chunks(
    path: Path, config: OtelImportConfig, chunk_bytes: int | None = None
) -> Iterator[SpanChunk]:
    """The spans of one file, a chunk of about `chunk_bytes` at a time, on this thread.

    Raises:
        InputError: the file cannot be opened or read, is not UTF-8 (JSON), or is a Parquet
            file that is not a Phoenix span table.
    """
    for job in chunk_jobs(path, config, chunk_bytes):
        yield from job()
