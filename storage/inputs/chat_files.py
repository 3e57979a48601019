"""Chat trajectory files in, nested trace Parquet and the import report out.

Reading never stops at a bad record: a JSONL line that does not parse becomes a record with
its reason, for the mapping to report. Both outputs are written to a temporary file beside
the target and renamed into place, so a crash never leaves a half-written file behind.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from storage.errors import InputError, RecordRejected
from storage.inputs.input_paths import CHAT_EXTENSIONS, LETTA_EXTENSIONS, SWE_AGENT_EXTENSIONS
from storage.inputs.json_values import (
    MAX_JSON_DEPTH,
    array_elements,
    json_depth,
    parse_record,
    too_deep,
)
from storage.inputs.surrogates import SURROGATE_ESCAPE, holds_lone_surrogate, surrogate_reason
from storage.store.whole_files import replacing
from transforms.chat import ChatRecord, ChatRejection, is_message
from transforms.trace_schema import nested_arrow_schema

__all__ = [
    "CHAT_EXTENSIONS",
    "DEFAULT_BATCH_ROWS",
    "TRACE_ARROW_SCHEMA",
    "checked_record",
    "document_records",
    "held_records",
    "iter_chat_records",
    "json_document",
    "read_chat_records",
    "report_path_for",
    "trace_parquet_writer",
    "write_import_report",
    "write_trace_parquet",
]

TRACE_ARROW_SCHEMA = nested_arrow_schema()
"""The nested layout written: what `tracegrade score` reads (docs/input-format.md)."""

REPORT_SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "record_number": pl.Int64(),
    "key": pl.String(),
    "trace_id": pl.String(),
    "rule": pl.String(),
    "reason": pl.String(),
}
"""Columns of the import report: one row per rejected trajectory."""


def report_path_for(out: str | Path) -> Path:
    """The default report beside `out`: `traces.parquet` -> `traces.import-report.csv`.

    CSV, so a folder holding both can still be given to `tracegrade score`.
    """
    path = Path(out)
    return path.with_name(f"{path.stem}.import-report.csv")


def _open_error(path: Path, exc: OSError) -> InputError:
    return InputError(f"cannot read {path} ({exc}); check the path and its permissions")


def _not_utf8(path: Path, exc: UnicodeDecodeError, where: str = "") -> InputError:
    return InputError(f"{path} is not UTF-8 text{where} ({exc}); re-export it as UTF-8")


def _line_records(path: Path) -> Iterator[ChatRecord]:
    """JSONL records one line at a time, so a large file never sits in memory whole."""
    position, number = 0, 0
    try:
        with path.open(encoding="utf-8-sig", newline="\n") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    value = parse_record(line.rstrip("\r\n"), f"line {number}")
                except RecordRejected as problem:
                    yield ChatRecord(number, position, None, problem.reason)
                else:
                    yield ChatRecord(number, position, value)
                position += 1
    except OSError as exc:
        raise _open_error(path, exc) from exc
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, exc, f" (after line {number})") from None


def checked_record(number: int, position: int, value: Any, escapes: bool, where: str) -> ChatRecord:
    """A record parsed with its whole document, or why it is rejected: nested deeper than
    MAX_JSON_DEPTH, or holding a lone UTF-16 surrogate (looked for only when the document's
    text had an escape that may be one, `escapes`)."""
    if json_depth(value) > MAX_JSON_DEPTH:
        return ChatRecord(number, position, None, too_deep(where).reason)
    if escapes and holds_lone_surrogate(value):
        return ChatRecord(number, position, None, surrogate_reason(where))
    return ChatRecord(number, position, value)


def json_document(path: Path, advice: str) -> tuple[Any, bool]:
    """The JSON document `path` holds, parsed whole, and whether its text has an escape that
    may be a lone surrogate (`checked_record`'s `escapes`).

    Raises:
        InputError: the file cannot be read or is not JSON ("... is not readable JSON
            (...); " and `advice`).
    """
    try:
        text = path.read_bytes().decode("utf-8-sig")
        document = json.loads(text)
    except (ValueError, OSError, RecursionError) as exc:
        raise InputError(f"{path} is not readable JSON ({exc!r}); {advice}") from None
    return document, SURROGATE_ESCAPE.search(text) is not None


def document_records(
    path: str | Path,
    advice: str,
    recognised: Callable[[Any], bool],
    records: Callable[[Any], list[Any]],
    problems: tuple[str, str],
    each: str,
) -> Iterator[ChatRecord]:
    """The chat records a producer's JSON document holds (`records` of it, where `recognised`
    says it is one), numbered in its order, each named `each` and its number. `problems`:
    what the file is said to be when it is not such a document, and when it holds no record
    (each after the file's path: "is not a tau2-bench results file (...)").

    Raises:
        InputError: the file is not readable JSON, not such a document, or holds no record.
    """
    source = Path(path)
    document, escapes = json_document(source, advice)
    yield from held_records(source, document, escapes, recognised, records, problems, each)


def held_records(
    source: Path,
    document: Any,
    escapes: bool,
    recognised: Callable[[Any], bool],
    records: Callable[[Any], list[Any]],
    problems: tuple[str, str],
    each: str,
) -> Iterator[ChatRecord]:
    """`document_records` of a document already parsed (`json_document`'s document and
    escapes), for a reader that looked at it first.

    Raises:
        InputError: the document is not such a document, or holds no record.
    """
    not_one, empty = problems
    if not recognised(document):
        raise InputError(f"{source} {not_one}")
    found = records(document)
    if not found:
        raise InputError(f"{source} {empty}")
    for index, record in enumerate(found):
        yield checked_record(index + 1, index, record, escapes, f"{each} {index + 1}")


def _array_records(path: Path) -> Iterator[ChatRecord]:
    """The elements of a JSON array (or one object); the document is parsed whole, or element
    by element when it nests too deep for one parse (the deep elements are rejected alone)."""
    try:
        data = path.read_bytes().removeprefix(b"\xef\xbb\xbf")
        text = data.decode("utf-8")
    except OSError as exc:
        raise _open_error(path, exc) from exc
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, exc) from None
    try:
        document: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            "fix the file, or name it .jsonl if it holds one trajectory a line"
        ) from None
    except RecursionError:
        yield from _deep_array_records(path, data)
        return
    if isinstance(document, dict) or (
        isinstance(document, list) and document and is_message(document[0])
    ):
        document = [document]  # one trajectory: an object, or its messages alone
    if not isinstance(document, list):
        raise InputError(
            f"{path} holds a JSON {type(document).__name__}; expected an array of trajectories"
        )
    check = SURROGATE_ESCAPE.search(text) is not None
    del text
    for index, value in enumerate(document):
        yield checked_record(index + 1, index, value, check, f"element {index + 1}")


def _deep_array_records(path: Path, data: bytes) -> Iterator[ChatRecord]:
    elements = array_elements(data)
    if elements is None:
        raise InputError(
            f"{path} nests deeper than JSON can be parsed and is not one array of trajectories; "
            "give an array of trajectory objects, or one a line in a .jsonl file"
        )
    for index, element in enumerate(elements):
        try:
            value = parse_record(element.decode("utf-8"), f"element {index + 1}")
        except RecordRejected as problem:
            yield ChatRecord(index + 1, index, None, problem.reason)
        else:
            yield ChatRecord(index + 1, index, value)


def iter_chat_records(path: str | Path) -> Iterator[ChatRecord]:
    """The records of a chat trajectory file, in file order; JSONL is streamed.

    The extension and the file's existence are checked at once; reading problems surface
    when the records are iterated.

    Raises:
        InputError: the file is missing, unreadable, not UTF-8, has another extension, or is
            a `.json` file whose text is not JSON or neither an array nor an object.
    """
    source = Path(path).expanduser()
    suffix = source.suffix.lower()
    if suffix not in (*CHAT_EXTENSIONS, *SWE_AGENT_EXTENSIONS, *LETTA_EXTENSIONS):
        raise InputError(
            f"{source} has extension {source.suffix!r}; chat import reads "
            f"{', '.join(CHAT_EXTENSIONS)} (a JSON array of trajectories or one a line)"
        )
    if not source.is_file():
        raise InputError(f"{source} does not exist or is not a file; give the trajectory file")
    return _line_records(source) if suffix in (".jsonl", ".ndjson") else _array_records(source)


def read_chat_records(path: str | Path) -> list[ChatRecord]:
    """Every record of a chat trajectory file, in file order (`iter_chat_records` as a list)."""
    return list(iter_chat_records(path))


DEFAULT_BATCH_ROWS = 10_000
"""Traces per Parquet row group while importing."""


class TraceWriter:
    """Appends traces to a Parquet file a batch at a time; rows marked with `drop` are left out."""

    def __init__(self, path: Path, batch_rows: int = DEFAULT_BATCH_ROWS) -> None:
        self._path = path
        self._batch_rows = batch_rows
        self._writer = pq.ParquetWriter(path, TRACE_ARROW_SCHEMA)
        self._pending: list[dict[str, Any]] = []
        self._open = True
        self.rows = 0
        """Traces added so far; the next trace added is row `rows`."""
        self.dropped: set[int] = set()
        """Rows to leave out of the final file (replaced by a later duplicate)."""

    def add(self, trace: dict[str, Any]) -> None:
        """Append one trace (ReasoningTrace JSON form) as the next row."""
        self._pending.append(trace)
        self.rows += 1
        if len(self._pending) >= self._batch_rows:
            self._flush()

    def drop(self, row: int) -> None:
        """Leave row `row` out of the final file."""
        self.dropped.add(row)

    def _flush(self) -> None:
        if self._pending:
            self._writer.write_table(pa.Table.from_pylist(self._pending, schema=TRACE_ARROW_SCHEMA))
            self._pending = []

    def close(self, complete: bool = True) -> None:
        """Flush (when `complete`) and close; then remove the dropped rows."""
        if not self._open:
            return
        self._open = False
        try:
            if complete:
                self._flush()
        finally:
            self._writer.close()
        if complete and self.dropped:
            self._remove_dropped()

    def _remove_dropped(self) -> None:
        kept = self._path.with_name(self._path.name + ".kept")
        try:
            with pq.ParquetWriter(kept, TRACE_ARROW_SCHEMA) as writer:
                offset = 0
                for batch in pq.ParquetFile(self._path).iter_batches(self._batch_rows):
                    rows = range(offset, offset + batch.num_rows)
                    mask = pa.array([row not in self.dropped for row in rows])
                    writer.write_table(pa.Table.from_batches([batch]).filter(mask))
                    offset += batch.num_rows
            os.replace(kept, self._path)
        finally:
            kept.unlink(missing_ok=True)


@contextmanager
def trace_parquet_writer(
    out: str | Path, batch_rows: int = DEFAULT_BATCH_ROWS
) -> Iterator[TraceWriter]:
    """A `TraceWriter` on a temporary file renamed onto `out` when the block succeeds."""
    with replacing(Path(out)) as temporary:
        writer = TraceWriter(temporary, batch_rows)
        try:
            yield writer
        except BaseException:
            writer.close(complete=False)
            raise
        writer.close()


def write_trace_parquet(traces: Sequence[dict[str, Any]], out: str | Path) -> Path:
    """Write trace objects (ReasoningTrace JSON form) as nested Parquet, atomically."""
    with trace_parquet_writer(out) as writer:
        for trace in traces:
            writer.add(trace)
    return Path(out)


def write_import_report(
    rejections: Sequence[ChatRejection], source_file: str, out: str | Path
) -> Path:
    """Write one CSV row per rejected trajectory (`REPORT_SCHEMA`), atomically; header only when none."""
    target = Path(out)
    frame = pl.DataFrame(
        {
            "source_file": [source_file] * len(rejections),
            "record_number": [item.record_number for item in rejections],
            "key": [item.key for item in rejections],
            "trace_id": [item.trace_id for item in rejections],
            "rule": [item.rule for item in rejections],
            "reason": [item.reason for item in rejections],
        },
        schema=REPORT_SCHEMA,
    )
    with replacing(target) as temporary:
        frame.write_csv(temporary)
    return target
