"""Reading a run's input: files read a batch at a time, validated, staged as Parquet in the run's
work folder with their quarantine rows, duplicates settled, and the file ledger written.
"""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path

import polars as pl

from pipelines.runs import Run
from storage._names import path_text
from storage.duckdb_store import DuckDBStore
from storage.hashing import file_sha256, sha256_hex
from storage.readers import (
    CANONICAL_SCHEMA,
    DEFAULT_BATCH_ROWS,
    FileFormat,
    FileInfo,
    ReadResult,
    expand_paths,
    read_file_batches,
)
from transforms.replay import trace_text
from transforms.validate import QUARANTINE_COLUMNS, split_duplicates, with_rule

__all__ = [
    "FILES",
    "NOVELTY",
    "PLAN",
    "QUARANTINE",
    "SCORES",
    "TRACES",
    "VALID",
    "commit_ledger",
    "input_files",
    "limit_to_range",
    "stage_chunk",
    "stage_inputs",
]

VALID, QUARANTINE, FILES, PLAN, NOVELTY, SCORES, TRACES, PARTS = (
    "valid.parquet",
    "quarantine.parquet",
    "files.parquet",
    "plan.parquet",
    "novelty.parquet",
    "scores.parquet",
    "traces.parquet",
    "parts",
)
_DROPPED = ["rule", "reason", "read_rule", "read_reason", "created_at_raw"]


class _BatchWriter:
    """Validates each batch of one file's rows and writes its valid and rejected rows."""

    def __init__(self, run: Run, prefix: str) -> None:
        self.folder = run.path(PARTS)
        self.prefix = prefix
        self.count = 0

    def __call__(self, frame: pl.DataFrame) -> None:
        name = f"{self.prefix}-{self.count:06d}"
        self.count += 1
        checked = with_rule(frame.lazy()).collect()
        valid = checked.filter(pl.col("rule").is_null()).drop(_DROPPED).with_columns(trace_text())
        valid.with_columns(text_sha=sha256_hex(valid["text"])).write_parquet(
            self.folder / f"{name}-valid.parquet"
        )
        checked.filter(pl.col("rule").is_not_null()).select(QUARANTINE_COLUMNS).write_parquet(
            self.folder / f"{name}-rejected.parquet"
        )


def stage_inputs(
    store: DuckDBStore,
    run: Run,
    paths: list[str],
    *,
    force: bool = False,
    batch_rows: int | None = None,
    file_format: FileFormat | None = None,
) -> dict[str, int]:
    """Read and validate the input files not loaded before; stage valid rows and quarantine.

    Files are read a batch at a time and each batch is validated and written out at once, so
    memory stays bounded whatever the input size. Duplicate ids are settled afterwards over
    the light key columns of every batch. A file whose (path, content hash) is already in the
    ledger, wholly loaded or quarantined, is skipped unless `force`. `file_format` reads span
    files (or another kind) instead of trace files.
    """
    files = input_files(paths, file_format)
    known = store.sql("SELECT path, content_hash FROM files WHERE status <> 'partial'")
    seen = set(zip(known["path"].to_list(), known["content_hash"].to_list(), strict=True))
    todo = [f for f in files if force or not _in_ledger(f, seen)]
    infos = _read_batches(run, todo, batch_rows or DEFAULT_BATCH_ROWS, file_format)
    rejected = _settle_duplicates(run, infos)
    quarantine = _write_quarantine(run, infos, rejected)
    shutil.rmtree(run.path(PARTS))
    valid_rows = pl.scan_parquet(run.path(VALID)).select("source_file").collect()
    _file_ledger(infos, valid_rows, rejected, run.run_id).write_parquet(run.path(FILES))
    return {
        "files_read": len(todo),
        "files_skipped": len(files) - len(todo),
        "files_quarantined": sum(info.rule is not None for info in infos),
        "rows_read": sum(info.rows_read for info in infos),
        "rows_valid": valid_rows.height,
        "rows_quarantined": quarantine.height,
    }


def _in_ledger(path: Path, seen: set[tuple[str, str]]) -> bool:
    """The file's (name, content hash) is in the ledger; a file that cannot be read is not
    (it is read, and quarantined as unreadable)."""
    try:
        return (path_text(path), file_sha256(path)) in seen
    except OSError:
        return False


def input_files(paths: list[str], file_format: FileFormat | None = None) -> list[Path]:
    """The files a run reads: `expand_paths` with the extensions of `file_format`, if any."""
    if file_format is None:
        return expand_paths(paths)
    return expand_paths(paths, extensions=file_format.extensions, what=file_format.what)


def _read_batches(
    run: Run, files: list[Path], batch_rows: int, file_format: FileFormat | None
) -> list[FileInfo]:
    """Each file's batches validated into the parts folder; a file rejected whole leaves none."""
    run.path(PARTS).mkdir(exist_ok=True)
    infos: list[FileInfo] = []
    for index, path in enumerate(files):
        writer = _BatchWriter(run, f"{index:06d}")
        info = read_file_batches(path, writer, batch_rows, file_format)
        if info.rule is not None:
            for part in run.path(PARTS).glob(f"{index:06d}-*"):
                part.unlink()
        infos.append(info)
    return infos


def _settle_duplicates(run: Run, infos: list[FileInfo]) -> pl.DataFrame:
    """Write valid.parquet without the duplicates; returns every rejected row (batches' rule
    breaks, duplicates, rejected files)."""
    valid_parts = sorted(run.path(PARTS).glob("*-valid.parquet"))
    rejected_parts = sorted(run.path(PARTS).glob("*-rejected.parquet"))
    duplicates = _duplicates(valid_parts)
    if valid_parts:
        pl.scan_parquet(valid_parts).join(
            duplicates.lazy().select("source_file", "row_number"),
            on=["source_file", "row_number"],
            how="anti",
            maintain_order="left",
        ).sink_parquet(run.path(VALID))
    else:
        pl.DataFrame(schema=_valid_schema()).write_parquet(run.path(VALID))
    return pl.concat(
        [
            *(pl.read_parquet(part) for part in rejected_parts),
            duplicates,
            ReadResult(pl.DataFrame(), infos).rejected_files(),
        ]
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
    return {**schema, "text": pl.String(), "text_sha": pl.String()}


def _duplicates(valid_parts: list[Path]) -> pl.DataFrame:
    """Quarantine rows for all but the last occurrence of each id, over every staged batch."""
    if not valid_parts:
        return pl.DataFrame(schema=dict.fromkeys(QUARANTINE_COLUMNS, pl.String())).cast(
            {"row_number": pl.Int64}
        )
    keys = (
        pl.scan_parquet(valid_parts)
        .select("trace_id", "content_hash", "source_file", "row_number")
        .with_columns(rule=pl.lit(None, dtype=pl.String), reason=pl.lit(None, dtype=pl.String))
    )
    return (
        split_duplicates(keys)
        .filter(pl.col("rule").is_not_null())
        .select(QUARANTINE_COLUMNS)
        .collect()
    )


def _file_ledger(
    files: list[FileInfo], valid: pl.DataFrame, rejected: pl.DataFrame, run_id: str
) -> pl.DataFrame:
    scored = valid.group_by("source_file").len("rows_scored")
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


def limit_to_range(archive: Run, low: datetime, high: datetime) -> dict[str, int]:
    """Keep the staged traces whose created_at lies in [low, high); count the others per file.

    A file with rows left out is recorded in the ledger as `partial`, so a later run reads it
    again (its stored traces are then recognised as unchanged).
    """
    staged = pl.scan_parquet(archive.path(VALID))
    inside = pl.col("created_at").is_between(low, high, closed="left")
    outside = staged.filter(~inside).group_by("source_file").len("rows_out_of_range").collect()
    staged.filter(inside).sink_parquet(archive.path("in_range.parquet"))
    archive.path("in_range.parquet").replace(archive.path(VALID))
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


def stage_chunk(archive: Run, chunk: Run, low: datetime, high: datetime) -> None:
    """Stage the archive's traces with created_at in [low, high) as the chunk run's input."""
    pl.scan_parquet(archive.path(VALID)).filter(
        pl.col("created_at").is_between(low, high, closed="left")
    ).sink_parquet(chunk.path(VALID))


def commit_ledger(store: DuckDBStore, archive: Run) -> None:
    """Write the archive's quarantine rows and file ledger, once every chunk is committed."""
    store.commit_run(
        archive.handle,
        {"quarantine": archive.path(QUARANTINE), "files": archive.path(FILES)},
    )
