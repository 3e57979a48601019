"""Reading a run's input: files read a batch at a time, each batch validated and its valid rows
appended to the run's staging (storage/store/staging_store.py) while its rejected rows go to the
quarantine; then duplicates are settled and the file ledger written.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path

import polars as pl

from pipelines.runs import Run
from pipelines.staged_levels import StagedLevels
from storage.inputs.input_paths import input_files
from storage.inputs.readers import (
    CANONICAL_SCHEMA,
    DEFAULT_BATCH_ROWS,
    FileFormat,
    FileInfo,
    JoinedFormat,
    ReadResult,
    read_file_batches,
)
from storage.names import path_text
from storage.spans.open_spans import (
    OPEN_SPANS,
    OPEN_UNTIL,
    OpenTraces,
    kept_traces,
    open_traces,
)
from storage.store.duckdb_store import DuckDBStore
from storage.store.hashing import sha256_hex
from storage.store.ledger import in_ledger, stored_files
from storage.store.staging_store import (
    StagedFile,
    create_staging,
    delete_staged,
    limit_staged,
    staged_count_by_file,
    staged_repeats,
    staged_view,
)
from transforms.replay import trace_text
from transforms.validate import QUARANTINE_COLUMNS, split_duplicates, with_rule

__all__ = [
    "FILES",
    "NOVELTY",
    "PLAN",
    "QUARANTINE",
    "SCORES",
    "commit_ledger",
    "limit_to_range",
    "open_span_tables",
    "stage_chunk",
    "stage_inputs",
]

QUARANTINE, FILES, PLAN, NOVELTY, SCORES, STAGED = (
    "quarantine.parquet",
    "files.parquet",
    "plan.parquet",
    "novelty.parquet",
    "scores.parquet",
    "staged",
)
_DROPPED = ["rule", "reason", "read_rule", "read_reason", "created_at_raw", "outcome_unknown"]


class _BatchWriter:
    """Validates each batch of one file's rows: valid rows go to the file's staged rows (and
    to `levels`, which computes their derived levels while they are in memory), rejected ones
    to the run's list of quarantine parts."""

    def __init__(
        self,
        run: Run,
        file_index: int,
        levels: StagedLevels | None = None,
        places: dict[str, int] | None = None,
    ) -> None:
        self.run = run
        self.file_index = file_index
        self.places = places
        self.levels = levels
        self.staged = StagedFile(run.path(STAGED), file_index, pl.Schema(_valid_schema()))
        self.rejected: list[pl.DataFrame] = []

    def __call__(self, frame: pl.DataFrame) -> None:
        checked = with_rule(frame.lazy()).collect()
        valid = checked.filter(pl.col("rule").is_null()).drop(_DROPPED).with_columns(trace_text())
        if self.places is None:  # one file's rows
            place = pl.lit(self.file_index, dtype=pl.Int64)
        else:  # files read together: each row's own file's place
            place = pl.col("source_file").replace_strict(self.places, return_dtype=pl.Int64)
        order = pl.col("row_number") + place * (1 << 40)
        staged = valid.with_columns(text_sha=sha256_hex(valid["text"]), _order=order).drop("text")
        self.staged.append(staged)
        if self.levels is not None:
            self.levels.add(staged)
        self.rejected.append(
            checked.filter(pl.col("rule").is_not_null()).select(QUARANTINE_COLUMNS)
        )


def stage_inputs(
    store: DuckDBStore,
    run: Run,
    paths: list[str],
    *,
    force: bool = False,
    batch_rows: int | None = None,
    file_format: FileFormat | None = None,
    levels: StagedLevels | None = None,
) -> dict[str, int]:
    """Read and validate the input files not loaded before; stage valid rows and quarantine.
    With `levels`, the derived confidence levels of the valid rows are computed in the same
    pass (`pipelines.staged_levels`).

    Files are read a batch at a time and each batch is validated and written out at once, so
    memory stays bounded whatever the input size. Duplicate ids are settled afterwards over
    the light key columns of every batch. A file whose (path, content hash) is already in the
    ledger, wholly loaded or quarantined, is skipped unless `force`. `file_format` reads span
    files (or another kind) instead of trace files: those are read together, with the spans
    of traces that earlier runs' files began (`storage.spans.open_spans`).
    """
    files = input_files(paths, file_format)
    seen = stored_files(store)
    todo = [f for f in files if force or not in_ledger(f, seen)]
    kept_ids = kept_traces(store)
    store.release()  # reading and staging work on this process's own tables only
    joined = _joined_files(todo, file_format)
    carried = None
    if joined is not None:
        reader = joined[0]
        carried = open_traces(store, kept_ids, reader.open_window_ns, reader.open_days)
    create_staging(store, run.run_id, pl.Schema(_valid_schema()), run.path(STAGED))
    infos, rejected_parts = _read_batches(
        run, todo, batch_rows or DEFAULT_BATCH_ROWS, file_format, levels, (joined, carried)
    )
    kept = {}
    if carried is not None:
        carried.write(Path(run.work_dir), run.run_id)
        kept = carried.counts()
    if levels is not None:
        levels.flush()
    rejected = _settle_duplicates(store, run, infos, rejected_parts)
    quarantine = _write_quarantine(run, infos, rejected)
    valid_rows = staged_count_by_file(store, run.run_id)
    _file_ledger(infos, valid_rows, rejected, run.run_id).write_parquet(run.path(FILES))
    # One count model: files read = loaded + quarantined whole, rows read = valid + quarantined.
    # A file quarantined whole reads no row; its quarantine row counts as the file's only.
    return {
        "files_read": len(todo),
        "files_skipped": len(files) - len(todo),
        "files_quarantined": sum(info.rule is not None for info in infos),
        "rows_read": sum(info.rows_read for info in infos),
        "rows_valid": int(valid_rows["rows_scored"].sum()),
        "rows_quarantined": int(quarantine["row_number"].is_not_null().sum()),
        **kept,
    }


def _read_batches(
    run: Run,
    files: list[Path],
    batch_rows: int,
    file_format: FileFormat | None,
    levels: StagedLevels | None,
    spans: tuple[tuple[JoinedFormat, list[int]] | None, OpenTraces | None],
) -> tuple[list[FileInfo], list[pl.DataFrame]]:
    """Each file's batches validated and staged; a file rejected whole leaves no staged row.
    Span files (`spans`: their reader and places, and the traces carried between runs) are
    read together (`storage.spans.otel_readers`: a trace's spans may be cut over files),
    staged as one part whose rows each name their own file. Returns the files' outcomes, in
    the files' order, and their rejected rows."""
    infos: dict[int, FileInfo] = {}
    rejected: list[pl.DataFrame] = []
    joined, carried = spans
    if joined is not None:
        reader, places = joined
        writer = _BatchWriter(run, places[0], levels, {path_text(files[i]): i for i in places})
        try:
            read = reader.read_joined(
                [files[i] for i in places],
                writer,
                batch_rows,
                scratch=run.path("unpacked"),
                open_traces=carried,
            )
        except BaseException:
            writer.staged.discard()
            raise
        writer.staged.close()
        rejected.extend(writer.rejected)
        for place, info in zip(places, read, strict=True):
            infos[place] = _holds_no_record(files[place], info, file_format)
    for index, path in enumerate(files):
        if index in infos:
            continue
        writer = _BatchWriter(run, index, levels)
        try:
            info = read_file_batches(
                path, writer, batch_rows, file_format, scratch=run.path("unpacked")
            )
        except BaseException:
            writer.staged.discard()
            raise
        info = _holds_no_record(path, info, file_format)
        if info.rule is not None:
            writer.staged.discard()
        else:
            writer.staged.close()
            rejected.extend(writer.rejected)
        infos[index] = info
    return [infos[index] for index in range(len(files))], rejected


def _joined_files(
    files: list[Path], file_format: FileFormat | None
) -> tuple[JoinedFormat, list[int]] | None:
    """The reader of the run's span files and their places, where there are any: even one
    file's traces may go on in a later run's files."""
    find = getattr(file_format, "joined_reader", None)
    if find is None:
        return None
    readers = [find(path) for path in files]
    places = [index for index, reader in enumerate(readers) if reader is not None]
    if len(places) == 1:  # a file of log records alone is not read as span files
        readers[places[0]] = find(files[places[0]], alone=True)
        places = [place for place in places if readers[place] is not None]
    if not places:
        return None
    return readers[places[0]], places


def _holds_no_record(path: Path, info: FileInfo, file_format: FileFormat | None) -> FileInfo:
    """A file read without error that yielded no record at all is quarantined, never recorded
    as loaded: a later run would skip it, and the run would have read nothing in silence. (A
    span file whose spans all went into other files' traces held records: `FileInfo.joined`.)"""
    if info.rule is not None or info.rows_read or info.joined:
        return info
    from storage.inputs.sniff import describe_file

    kind = "trace files" if file_format is None else file_format.what
    reason = (
        f"the file yields no trace: it holds {describe_file(path)} (read as {kind}; the "
        "formats: docs/input-format.md, docs/import.md)"
    )
    return replace(info, rule="no_records", reason=reason)


def _settle_duplicates(
    store: DuckDBStore, run: Run, infos: list[FileInfo], rejected_parts: list[pl.DataFrame]
) -> pl.DataFrame:
    """Remove all but the last occurrence of each id from the staging table; returns every
    rejected row (batches' rule breaks, duplicates, rejected files). Only the rows of repeated
    ids are read back: the rule compares occurrences of one id, so the others cannot break it."""
    keys = staged_repeats(
        store, run.run_id, ("trace_id", "content_hash", "source_file", "row_number")
    )
    duplicates = (
        split_duplicates(
            keys.lazy().with_columns(
                rule=pl.lit(None, dtype=pl.String), reason=pl.lit(None, dtype=pl.String)
            )
        )
        .filter(pl.col("rule").is_not_null())
        .select(QUARANTINE_COLUMNS)
        .collect()
    )
    delete_staged(store, run.run_id, duplicates)
    empty = pl.DataFrame(schema=dict.fromkeys(QUARANTINE_COLUMNS, pl.String())).cast(
        {"row_number": pl.Int64}
    )
    return pl.concat(
        [empty, *rejected_parts, duplicates, ReadResult(pl.DataFrame(), infos).rejected_files()]
    )


def _write_quarantine(run: Run, infos: list[FileInfo], rejected: pl.DataFrame) -> pl.DataFrame:
    """The run's quarantine rows (with each file's content hash), written to the work folder."""
    hashes = {info.path: info.content_hash for info in infos}
    quarantine = rejected.select(
        file=pl.col("source_file"),
        file_hash=pl.col("source_file").replace_strict(hashes, return_dtype=pl.String),
        row_number=pl.col("row_number"),
        trace_id=pl.col("trace_id"),
        rule=pl.col("rule"),
        reason=pl.col("reason"),
        run_id=pl.lit(run.run_id),
    )
    quarantine.write_parquet(run.path(QUARANTINE))
    return quarantine


def _valid_schema() -> dict[str, pl.DataType]:
    schema = {k: v for k, v in CANONICAL_SCHEMA.items() if k not in _DROPPED}
    return {**schema, "text_sha": pl.String(), "_order": pl.Int64()}


def _file_ledger(
    files: list[FileInfo], scored: pl.DataFrame, rejected: pl.DataFrame, run_id: str
) -> pl.DataFrame:
    """One ledger row per file read; `scored` holds the staged rows per file (source_file,
    rows_scored)."""
    scored = scored.with_columns(pl.col("rows_scored").cast(pl.Int64))
    quarantined = (
        rejected.filter(pl.col("row_number").is_not_null())
        .group_by("source_file")
        .len("rows_quarantined")
    )
    ledger = pl.DataFrame(
        [
            {
                "path": info.path,
                "content_hash": info.content_hash,
                "size": info.size,
                "status": "quarantined" if info.rule else "loaded",
                "rule": info.rule,
                "reason": info.reason,
                "rows_read": info.rows_read,
            }
            for info in files
        ],
        schema={
            "path": pl.String,
            "content_hash": pl.String,
            "size": pl.Int64,
            "status": pl.String,
            "rule": pl.String,
            "reason": pl.String,
            "rows_read": pl.Int64,
        },
    )
    return (
        ledger.join(scored, left_on="path", right_on="source_file", how="left")
        .join(quarantined, left_on="path", right_on="source_file", how="left")
        .with_columns(
            pl.col("rows_scored").fill_null(0).cast(pl.Int64),
            pl.col("rows_quarantined").fill_null(0).cast(pl.Int64),
            rows_out_of_range=pl.lit(0, dtype=pl.Int64),
            run_id=pl.lit(run_id),
        )
    )


def limit_to_range(
    store: DuckDBStore, archive: Run, low: datetime, high: datetime
) -> dict[str, int]:
    """Keep the staged traces whose created_at lies in [low, high); count the others per file.

    A file with rows left out is recorded in the ledger as `partial`, so a later run reads it
    again (its stored traces are then recognised as unchanged).
    """
    outside = limit_staged(store, archive.run_id, low, high)
    ledger = (
        pl.read_parquet(archive.path(FILES))
        .drop("rows_out_of_range")
        .join(outside, left_on="path", right_on="source_file", how="left")
        .with_columns(pl.col("rows_out_of_range").fill_null(0).cast(pl.Int64))
        .with_columns(
            rows_scored=pl.col("rows_scored") - pl.col("rows_out_of_range"),
            status=pl.when(pl.col("rows_out_of_range") > 0)
            .then(pl.lit("partial"))
            .otherwise(pl.col("status")),
        )
    )
    ledger.write_parquet(archive.path(FILES))
    left_out = int(outside["rows_out_of_range"].sum())
    return {"rows_out_of_range": left_out, "rows_valid": -left_out}


def stage_chunk(
    store: DuckDBStore, archive: Run, chunk: Run, low: datetime, high: datetime
) -> None:
    """Stage the archive's traces with created_at in [low, high) as the chunk run's input."""
    staged_view(store, archive.run_id, chunk.run_id, low, high)


def commit_ledger(store: DuckDBStore, archive: Run) -> None:
    """Write the archive's quarantine rows, file ledger and kept spans, once every chunk is
    committed."""
    tables = {"quarantine": archive.path(QUARANTINE), "files": archive.path(FILES)}
    store.commit_run(archive.handle, tables | open_span_tables(archive))


def open_span_tables(run: Run) -> dict[str, Path]:
    """The run's kept spans and the time before which earlier ones are let go, as the tables
    its publication merges (`storage.store.commit.merge`), where it wrote them."""
    files = {"open_spans": run.path(OPEN_SPANS), "open_until": run.path(OPEN_UNTIL)}
    return {name: path for name, path in files.items() if path.exists()}
