"""Every byte of trace input: finding the files and reading them into canonical rows.

`read_traces` never raises for a bad file: a file that cannot be read is
reported in `ReadResult.files` with its rule and reason, and the other files
still load. Record-level problems stay on the rows (`read_rule`) for
`transforms.validate` to quarantine. The format contract is docs/input-format.md.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import polars as pl
import pyarrow as pa

from storage.errors import FileRejected
from storage.inputs._json import read_json_rows
from storage.inputs._parquet import iter_parquet_rows
from storage.inputs.canonical import CANONICAL_SCHEMA, STEP_DTYPE
from storage.inputs.input_paths import PARQUET_EXTENSIONS, expand_paths
from storage.inputs.packed import PackError, codec_of, unpacked, unpacked_reason
from storage.names import path_text
from storage.store.hashing import file_sha256

if TYPE_CHECKING:
    from storage.spans.open_spans import OpenTraces

__all__ = [
    "CANONICAL_SCHEMA",
    "FILE_QUARANTINE_SCHEMA",
    "STEP_DTYPE",
    "DEFAULT_BATCH_ROWS",
    "FileFormat",
    "FileInfo",
    "JoinedFormat",
    "ReadResult",
    "file_facts",
    "read_file_batches",
    "read_traces",
    "rows_from_objects",
]

FILE_QUARANTINE_SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "row_number": pl.Int64(),
    "trace_id": pl.String(),
    "rule": pl.String(),
    "reason": pl.String(),
}
"""Columns of a quarantine row, shared by rejected files and rejected records."""

_LINES = (".jsonl", ".ndjson")


@dataclass(frozen=True)
class FileInfo:
    """What happened to one input file.

    Attributes:
        path: The resolved path, as written into `source_file`.
        size: Size in bytes.
        content_hash: SHA-256 hex of the file's bytes ("" when it could not be opened).
        rows_read: Rows the file contributed to `ReadResult.rows` (0 when rejected).
        rule: `empty_file`, `unreadable_file` or `schema_mismatch` when the whole
            file was rejected, else None.
        reason: Why the file was rejected, else None.
        joined: Its spans were mapped with other span files' of the run
            (`storage.spans.otel_readers`): a file whose spans all belong to traces whose
            root is in another file reads no row of its own, yet held records.
    """

    path: str
    size: int
    content_hash: str
    rows_read: int
    rule: str | None = None
    reason: str | None = None
    joined: bool = False


@dataclass(frozen=True)
class ReadResult:
    """Canonical rows of every readable file, and one `FileInfo` per file in read order."""

    rows: pl.DataFrame
    files: list[FileInfo]

    def rejected_files(self) -> pl.DataFrame:
        """Quarantine rows (`FILE_QUARANTINE_SCHEMA`) for the files rejected as a whole."""
        rejected = [info for info in self.files if info.rule is not None]
        return pl.DataFrame(
            {
                "source_file": [info.path for info in rejected],
                "row_number": [None] * len(rejected),
                "trace_id": [None] * len(rejected),
                "rule": [info.rule for info in rejected],
                "reason": [info.reason for info in rejected],
            },
            schema=FILE_QUARANTINE_SCHEMA,
        )


DEFAULT_BATCH_ROWS = 5_000
"""Rows per batch when a Parquet file is read in pieces."""


class FileFormat(Protocol):
    """Another kind of input file a scoring run can read as canonical rows (OTel span files:
    `storage.spans.otel_readers.OtelFileFormat`); trace files need none."""

    @property
    def extensions(self) -> tuple[str, ...]:
        """File extensions of this kind (folders are searched for these)."""
        ...

    @property
    def what(self) -> str:
        """What the files are called in messages ("span files")."""
        ...

    def read_batches(
        self, path: Path, consume: Callable[[pl.DataFrame], None], batch_rows: int
    ) -> FileInfo:
        """`read_file_batches` for this kind of file."""
        ...


class JoinedFormat(FileFormat, Protocol):
    """A kind of file whose files of one run are read together (span files: a trace's spans
    may be cut over several; `storage.spans.otel_readers.OtelFileFormat`)."""

    @property
    def open_window_ns(self) -> int:
        """How near the newest span a trace must end to be carried to the next run (0: none;
        `storage.spans.open_spans`)."""
        ...

    @property
    def open_days(self) -> int:
        """How long the spans a run keeps wait for a later run."""
        ...

    def read_joined(
        self,
        paths: Sequence[Path],
        consume: Callable[[pl.DataFrame], None],
        batch_rows: int,
        scratch: Path | None = None,
        open_traces: OpenTraces | None = None,
    ) -> list[FileInfo]:
        """Every file's rows to `consume` (each row naming its file); each file's outcome.
        With `open_traces`, the traces carried between runs."""
        ...


def _unopened(name: str, exc: OSError) -> FileInfo:
    reason = f"the file cannot be opened ({exc}); check that it exists and is readable"
    return FileInfo(name, 0, "", 0, "unreadable_file", reason)


def _empty(name: str, digest: str) -> FileInfo:
    reason = "the file has zero bytes; the export was probably interrupted: re-export it"
    return FileInfo(name, 0, digest, 0, "empty_file", reason)


def file_facts(path: Path) -> FileInfo:
    """A file before it is read: its name, size and content hash, with the rule that stops it
    being read (unreadable_file, empty_file) or none. Readers of other formats start here."""
    name = path_text(path)
    try:
        size = path.stat().st_size
        digest = file_sha256(path)
    except OSError as exc:
        return _unopened(name, exc)
    return _empty(name, digest) if size == 0 else FileInfo(name, size, digest, 0)


def _batches(path: Path, data: bytes | None, name: str, batch_rows: int) -> Iterator[pl.DataFrame]:
    """The file's canonical rows a batch at a time; reading errors surface as each comes."""
    if data is None:
        yield from iter_parquet_rows(path, batch_rows, name)
    else:
        yield read_json_rows(name, data, lines=path.suffix.lower() in _LINES)


def read_file_batches(
    path: Path,
    consume: Callable[[pl.DataFrame], None],
    batch_rows: int = DEFAULT_BATCH_ROWS,
    file_format: FileFormat | None = None,
    scratch: Path | None = None,
) -> FileInfo:
    """Read one trace file, handing its canonical rows to `consume` a batch at a time.

    Parquet is read `batch_rows` rows at a time so a large file never sits in memory whole;
    JSON and JSONL arrive as one batch. A file rejected after some batches were consumed
    returns a FileInfo with its rule: the caller must discard what it consumed of that file.
    Never raises for a bad file. `file_format` reads another kind of file the same way. A
    gzip or Zstandard file is read as the file it holds, unpacked under `scratch` (the
    system's temporary folder when None): `storage.inputs.packed`.
    """
    try:
        codec = codec_of(path)
    except OSError:
        codec = None  # the reader says why the file cannot be read
    if codec is not None:
        return _read_packed(path, codec, consume, batch_rows, file_format, scratch)
    if file_format is not None:
        return file_format.read_batches(path, consume, batch_rows)
    name = path_text(path)
    is_parquet = path.suffix.lower() in PARQUET_EXTENSIONS
    try:
        size = path.stat().st_size
        data = None if is_parquet else path.read_bytes()
        digest = file_sha256(path) if data is None else hashlib.sha256(data).hexdigest()
    except OSError as exc:
        return _unopened(name, exc)
    if size == 0:
        return _empty(name, digest)
    rows_read = 0
    batches = _batches(path, data, name, batch_rows)
    while True:
        try:
            frame = next(batches, None)
        except FileRejected as rejected:
            return FileInfo(name, size, digest, 0, rejected.rule, rejected.reason)
        except OSError as exc:
            reason = f"the file could not be read ({exc}); check that it is readable"
            return FileInfo(name, size, digest, 0, "unreadable_file", reason)
        except (pa.ArrowException, pl.exceptions.PolarsError) as exc:
            reason = (
                f"the file's data could not be converted ({type(exc).__name__}: {exc}); "
                "re-export it in the documented layout"
            )
            return FileInfo(name, size, digest, 0, "unreadable_file", reason)
        if frame is None:
            break
        consume(frame)  # what this raises (a full disk under the run's staging) is the run's
        rows_read += frame.height
    return FileInfo(name, size, digest, rows_read)


def _read_packed(
    path: Path,
    codec: str,
    consume: Callable[[pl.DataFrame], None],
    batch_rows: int,
    file_format: FileFormat | None,
    scratch: Path | None,
) -> FileInfo:
    """`read_file_batches` of a compressed file: what it holds unpacked under `scratch` and read
    there, its rows, rule and reason naming the compressed file, its size and hash the
    compressed file's."""
    facts = file_facts(path)
    if facts.rule is not None:
        return facts

    def relabelled(frame: pl.DataFrame) -> None:
        consume(frame.with_columns(source_file=pl.lit(facts.path, dtype=pl.String)))

    try:
        with unpacked(path, codec, scratch) as plain:
            info = read_file_batches(plain, relabelled, batch_rows, file_format)
            if info.reason is not None:
                info = replace(info, reason=unpacked_reason(info.reason, plain, facts.path, codec))
    except PackError as exc:
        return replace(facts, rule="unreadable_file", reason=str(exc))
    return replace(info, path=facts.path, size=facts.size, content_hash=facts.content_hash)


def read_traces(paths: Sequence[str | Path]) -> ReadResult:
    """Read every trace file named by `paths` into one canonical frame.

    Rows come in sorted-file order, then row order, with exactly
    `CANONICAL_SCHEMA`. A file that cannot be read is reported in
    `ReadResult.files` (and `ReadResult.rejected_files()`), never raised.

    Raises:
        InputError: From `expand_paths`, when a path matches nothing.
    """
    frames: list[pl.DataFrame] = []
    infos: list[FileInfo] = []
    for path in expand_paths(paths):
        parts: list[pl.DataFrame] = []
        info = read_file_batches(path, parts.append)
        infos.append(info)
        if info.rule is None:
            frames.extend(parts)
    rows = pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=CANONICAL_SCHEMA)
    return ReadResult(rows=rows, files=infos)


def rows_from_objects(
    traces: Sequence[Mapping[str, Any]], source: str = "<memory>"
) -> pl.DataFrame:
    """Canonical rows of trace objects already in memory, read exactly as a JSON file.

    Args:
        traces: Trace objects in the JSON form of docs/input-format.md; values
            JSON cannot hold (such as datetimes) are written as their `str()`.
        source: What to put in `source_file`.
    """
    encoded = json.dumps([dict(trace) for trace in traces], default=str).encode()
    return read_json_rows(source, encoded, lines=False)
