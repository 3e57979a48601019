"""Span files as a scoring run's input: the span files of one run mapped together.

`tracegrade score` hands span files to `OtelFileFormat` (by their content, or `--format otel`),
so a nightly run can point at the Collector's output folder or a Langfuse export. Exporters
cut one run's spans over files: Langfuse's blob storage export writes each observation into
the file of the time window it starts in, the Collector's file exporter rotates files. So the
span files of one scoring run are read into one spool (`read_joined`) and each trace is
mapped from all its spans, then handed over as a row of the file its root span came from
(else its first span's). The ledger stays per file: a file whose spans all belong to
another file's traces is loaded with no row of its own. A trace cut over two runs (a window
at midnight, scored on two nights) is mapped again whole by the second run from the spans the
first kept in the database (`storage.spans.open_spans`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl

from storage.errors import InputError, UnrecognisedFile
from storage.inputs.packed import PackError, codec_of, unpacked, unpacked_reason
from storage.inputs.readers import FileInfo, file_facts
from storage.names import path_text
from storage.spans.block_reading import read_chunks
from storage.spans.open_spans import OpenTraces
from storage.spans.otel_files import OTEL_EXTENSIONS, SpanChunk, log_events
from storage.spans.otel_output import canonical_rows
from storage.spans.otel_spool import (
    BUCKET_BYTES,
    DEFAULT_SPOOL_BYTES,
    MAX_BUCKETS,
    SpanSpool,
    bucket_count,
)
from storage.spans.otlp_logs import FileLogs, starts_with_logs
from transforms.config.otel import OtelImportConfig
from transforms.otel import REJECTION_SCHEMA, map_spans, otel_trace_id
from transforms.otel_spans import span_facts

__all__ = ["OtelFileFormat"]

READ_WORKERS = 2
"""Blocks of a span file parsed at once (`storage.spans.otel_files.read_chunks`)."""


_PACKED_RATIO = 8
"""How many times its size a compressed span file is taken to hold, for the spool's buckets."""

SPOOL_BYTES = DEFAULT_SPOOL_BYTES
"""Span rows held in memory before the spool writes them under the run's work folder."""

JOINED_BYTES = MAX_BUCKETS * BUCKET_BYTES
"""The most bytes of span files read together: past that the spool's buckets would outgrow
their size (and the mapping's memory with them), so the files are read in consecutive runs
of at most this much, a trace whole within one (exporters' files follow time)."""


@dataclass(frozen=True)
class OtelFileFormat:
    """OpenTelemetry span files read as trace files (a `storage.inputs.readers.FileFormat`).

    Rows of a file: one per mapped trace whose root span (else first span) it holds, then one
    per rejected trace, invalid span or malformed record (with its rule as `read_rule`, so the
    run quarantines it), numbered from 1 in the file.
    """

    config: OtelImportConfig
    extensions: tuple[str, ...] = OTEL_EXTENSIONS
    what: str = "span files"

    @property
    def open_window_ns(self) -> int:
        """`open_trace_minutes` in nanoseconds (`storage.spans.open_spans`)."""
        return self.config.open_trace_minutes * 60_000_000_000

    @property
    def open_days(self) -> int:
        """`open_trace_days` (`storage.spans.open_spans`)."""
        return self.config.open_trace_days

    def read_batches(
        self, path: Path, consume: Callable[[pl.DataFrame], None], batch_rows: int
    ) -> FileInfo:
        """Map the spans of `path` and hand the canonical rows to `consume`, `batch_rows` at a
        time; never raises for a bad file (the FileInfo carries its rule)."""
        return self.read_joined([path], consume, batch_rows)[0]

    def read_joined(
        self,
        paths: Sequence[Path],
        consume: Callable[[pl.DataFrame], None],
        batch_rows: int,
        scratch: Path | None = None,
        open_traces: OpenTraces | None = None,
    ) -> list[FileInfo]:
        """Map the spans of all `paths` together (the module's docstring) and hand the
        canonical rows to `consume`, `batch_rows` at a time, each row naming its own file.
        A compressed file is unpacked under `scratch` just before it is read and removed
        after. A file that cannot be read is rejected whole (its FileInfo carries the rule)
        and none of its spans is mapped; the others are read all the same. With
        `open_traces`, the spans earlier runs kept go into the traces these files go on
        with, and the spans of the traces that may go on in a later run's files are kept
        there. Never raises for a bad file."""
        infos = [file_facts(path) for path in paths]
        packed = [_codec(path) for path in paths]
        sizes = [
            0 if info.rule is not None else info.size * (_PACKED_RATIO if codec else 1)
            for info, codec in zip(infos, packed, strict=True)
        ]
        read: list[FileInfo] = []
        for group in _groups(sizes):
            read += self._read_group(
                [(paths[i], infos[i], packed[i]) for i in group],
                sum(sizes[i] for i in group),
                consume,
                batch_rows,
                scratch,
                open_traces,
            )
        return read

    def _read_group(
        self,
        files: list[tuple[Path, FileInfo, str | None]],
        size: int,
        consume: Callable[[pl.DataFrame], None],
        batch_rows: int,
        scratch: Path | None,
        open_traces: OpenTraces | None,
    ) -> list[FileInfo]:
        """`read_joined` of files that fit one spool: (path, facts, codec) each."""
        infos = [info for _, info, _ in files]
        sources: dict[str, int] = {}  # the text spans name their file by: the file's place
        failed: list[str] = []  # files that could not be read, whose parked spans are left out
        parked = [0] * len(files)  # spans each file parked
        rejections: dict[int, list[dict[str, Any]]] = {}
        logs = _group_logs(files)
        if open_traces is not None:
            open_traces.next_files()
        if scratch is not None:
            scratch.mkdir(parents=True, exist_ok=True)
        with SpanSpool(bucket_count(size), scratch, SPOOL_BYTES) as spool:
            first = 0  # orders of each file's chunks follow the files before it
            for index, (path, info, codec) in enumerate(files):
                if info.rule is not None:
                    continue
                with _plain(path, codec, scratch) as (plain, problem):
                    if problem is not None:
                        infos[index] = replace(info, rule="unreadable_file", reason=problem)
                        continue
                    own = None if logs is None or codec else {plain: logs.get(plain, FileLogs())}
                    before = spool.rows
                    read = self._parked(plain, spool, rejections, first, own, open_traces)
                    if isinstance(read, str):
                        infos[index] = _rejected(info, read, plain, codec)
                        failed.append(path_text(plain))
                        for order in [order for order in rejections if order >= first]:
                            del rejections[order]  # the malformed records of the file left out
                        continue
                    parked[index] = spool.rows - before
                    sources[path_text(plain)] = index
                    first = read
            rows = self._handed_over(
                spool, rejections, (sources, failed), infos, (consume, batch_rows), open_traces
            )

        def joined(path: Path, index: int) -> bool:
            """Its spans, or its log records' content, mapped with another file's spans."""
            given = logs is not None and logs.get(path, FileLogs()).given > 0
            return len(sources) > 1 and (parked[index] > 0 or given)

        return [
            info
            if info.rule is not None
            else replace(info, rows_read=rows[index], joined=joined(path, index))
            for index, ((path, _, _), info) in enumerate(zip(files, infos, strict=True))
        ]

    def _parked(
        self,
        path: Path,
        spool: SpanSpool,
        rejections: dict[int, list[dict[str, Any]]],
        first: int,
        logs: dict[Path, FileLogs] | None,
        open_traces: OpenTraces | None,
    ) -> int | str:
        """Park the spans of `path` (chunk orders from `first`); the order after its last
        chunk, or the rule and reason of a file that cannot be read (`rule: reason`), whose
        parked spans are then left out of the mapping by its name."""
        last = [first - 1]
        lock = threading.Lock()
        traces: list[pl.Series] = []  # the file's traces and newest start, for `open_traces`
        newest: list[int] = []

        def park(order: int, chunk: SpanChunk) -> None:
            spool.add(span_facts(chunk.spans, self.config), order=first + order)
            rejections[first + order] = chunk.rejections  # one key a chunk: no two alike
            ids, start = (
                chunk.spans["trace_hex"].drop_nulls().unique(),
                chunk.spans["start_ns"].max(),
            )
            with lock:
                last[0] = max(last[0], first + order)
                traces.append(ids)
                newest.extend([] if start is None else [int(start)])  # type: ignore[arg-type]

        try:
            read_chunks([path], self.config, park, workers=READ_WORKERS, logs=logs)
        except UnrecognisedFile as exc:
            return f"unrecognised_file: {exc}"
        except InputError as exc:
            return f"unreadable_file: {exc}"
        if open_traces is not None:
            open_traces.read(traces, max(newest, default=None))
        return last[0] + 1

    def _handed_over(
        self,
        spool: SpanSpool,
        rejections: dict[int, list[dict[str, Any]]],
        files: tuple[dict[str, int], list[str]],
        infos: list[FileInfo],
        output: tuple[Callable[[pl.DataFrame], None], int],
        open_traces: OpenTraces | None,
    ) -> list[int]:
        """Each bucket mapped and its rows handed over by file (`sources`: each read file's
        place; `failed`: the files left out); the rows of each file."""
        (sources, failed), (consume, batch_rows) = files, output
        rows = [0] * len(infos)

        def hand_over(index: int, traces: pl.DataFrame | None, rejected: pl.DataFrame) -> None:
            frame = canonical_rows(traces, rejected, infos[index].path, rows[index] + 1)
            for batch in frame.iter_slices(batch_rows):
                consume(batch)
            rows[index] += frame.height

        for bucket in spool.buckets():
            if failed:
                bucket = bucket.filter(~pl.col("source_file").is_in(failed).fill_null(False))
                if bucket.is_empty():
                    continue
            if open_traces is not None:
                bucket = open_traces.joined(bucket)
            bucket, copies = self._latest_copies(bucket, sources)
            if open_traces is not None:
                open_traces.keep(bucket)
            mapping = map_spans(bucket, self.config)
            traces = _by_file(mapping.traces, sources)
            rejected = _by_file(pl.concat([copies, mapping.rejections]), sources)
            for index in sorted(traces.keys() | rejected.keys()):
                empty = pl.DataFrame(schema=REJECTION_SCHEMA)
                hand_over(index, traces.get(index), rejected.get(index, empty))
        malformed = [row for order in sorted(rejections) for row in rejections[order]]
        if malformed:
            frame = pl.DataFrame(malformed, schema=REJECTION_SCHEMA)
            for index, part in sorted(_by_file(frame, sources).items()):
                hand_over(index, None, part)
        return rows

    def _latest_copies(
        self, bucket: pl.DataFrame, sources: dict[str, int]
    ) -> tuple[pl.DataFrame, pl.DataFrame]:
        """A span that several files hold (a trace exported twice, a window exported again)
        taken from the last of them, as a later file's row replaces an earlier one's; and for
        each file whose every span of a trace is in a later file too, a `duplicate_id`
        rejection of its copy (as when each file was mapped alone). A span an earlier run kept
        (`_earlier`, `OpenTraces.joined`) comes before every file's. Spans without ids are
        left to the mapping, which says why they cannot be placed."""
        none = pl.DataFrame(schema=REJECTION_SCHEMA)
        carried = "_earlier" in bucket.columns
        if len(sources) == 1 and not carried:
            return bucket, none
        place = pl.col("source_file").replace_strict(sources, return_dtype=pl.Int64)
        if carried:
            place = pl.when(pl.col("_earlier")).then(pl.lit(-1, dtype=pl.Int64)).otherwise(place)
            bucket = bucket.with_columns(_place=place).drop("_earlier")
            place = pl.col("_place")
        keyed = bucket.with_columns(_place=place)
        ids = pl.col("trace_hex").is_not_null() & pl.col("span_hex").is_not_null()
        latest = pl.col("_place") == pl.col("_place").max().over("trace_hex", "span_hex")
        keep = ~ids | latest
        earlier = keyed.filter(~keep)
        if earlier.is_empty():
            return keyed.drop("_place"), none
        kept = keyed.filter(keep)
        left = kept.select("_place", "trace_hex").unique()
        whole = (
            earlier.group_by("_place", "trace_hex", maintain_order=True)
            .agg(
                pl.col("source_file").first(),
                pl.col("record_number").min(),
                pl.len().alias("spans"),
            )
            .join(left, on=["_place", "trace_hex"], how="anti", maintain_order="left")
            .filter(pl.col("_place") >= 0)  # an earlier run's copy: its file is not read here
        )
        by_trace = self.config.group_by != "agent"  # else a trace's runs have ids of their own
        copies = whole.select(
            "source_file",
            "record_number",
            pl.col("trace_hex").alias("otel_trace_id"),
            pl.lit(None, dtype=pl.String).alias("span_id"),
            pl.Series(
                [otel_trace_id(hex_id) if by_trace else None for hex_id in whole["trace_hex"]],
                dtype=pl.String,
            ).alias("trace_id"),
            pl.lit("duplicate_id").alias("rule"),
            pl.concat_str(
                pl.lit("this file's copy of the trace ("),
                pl.col("spans").cast(pl.String),
                pl.lit(" spans) is in a later file too, whose copy is scored"),
            ).alias("reason"),
        )
        return kept.drop("_place"), copies.cast(pl.Schema(REJECTION_SCHEMA))


def _group_logs(files: list[tuple[Path, FileInfo, str | None]]) -> dict[Path, FileLogs] | None:
    """The log records' content of the group's plain files, searched together where one of
    them begins with log records (the Collector's logs pipeline written to a file of its
    own), so that a record is read with its span in another file; None where none does, or
    the search found none (each file is then searched on its own as it is read). Compressed
    files are searched on their own."""
    plain = [path for path, info, codec in files if info.rule is None and codec is None]
    if not any(starts_with_logs(path) for path in plain):
        return None
    return log_events(plain) or None


def _groups(sizes: list[int]) -> Iterator[list[int]]:
    """The files' places in runs of consecutive files whose (unpacked) bytes fit one spool
    (`JOINED_BYTES`; a file larger than that alone): a trace is whole within a run of files."""
    group: list[int] = []
    held = 0
    for index, size in enumerate(sizes):
        if group and held + size > JOINED_BYTES:
            yield group
            group, held = [], 0
        group.append(index)
        held += size
    if group:
        yield group


def _codec(path: Path) -> str | None:
    try:
        return codec_of(path)
    except OSError:
        return None  # `file_facts` has said why the file cannot be read


@contextmanager
def _plain(
    path: Path, codec: str | None, scratch: Path | None
) -> Iterator[tuple[Path, str | None]]:
    """`path` as a file the span readers can read (a compressed one unpacked under `scratch`,
    removed afterwards), or the reason it cannot be."""
    if codec is None:
        yield path, None
        return
    with ExitStack() as stack:
        try:
            plain = stack.enter_context(unpacked(path, codec, scratch))
        except PackError as exc:
            yield path, str(exc)
            return
        yield plain, None


def _rejected(info: FileInfo, problem: str, plain: Path, codec: str | None) -> FileInfo:
    """`info` with the rule and reason `_parked` gave, naming the file as the ledger does."""
    rule, _, reason = problem.partition(": ")
    if codec is not None:
        reason = unpacked_reason(reason, plain, info.path, codec)
    return replace(info, rule=rule, reason=reason)


def _place(source: str | None, sources: dict[str, int]) -> int:
    """The place of the file `source` names; every reader names its rows' file, so with one
    file read, that one."""
    return next(iter(sources.values())) if len(sources) == 1 else sources[str(source)]


def _by_file(frame: pl.DataFrame, sources: dict[str, int]) -> dict[int, pl.DataFrame]:
    """The rows of `frame` by the place of the file their `source_file` names."""
    if frame.is_empty():
        return {}
    if len(sources) == 1:
        return {_place(None, sources): frame}
    parts = frame.partition_by("source_file", as_dict=True, maintain_order=True)
    return {_place(key[0], sources): part for key, part in parts.items()}
