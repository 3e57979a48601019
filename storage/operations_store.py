"""Eval cases in, operation scores out: reading case files and the DuckDB tables of the scorers.

The tables live beside the trace tables in the same database file (storage.schema). Results commit in one transaction per run,
by column name. docs/operations.md documents the tables and views.
"""

from __future__ import annotations

import glob
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from storage._flat_parquet import conform_to_schema, read_parquet_input
from storage.duckdb_store import DuckDBStore
from storage.errors import InputError
from storage.hashing import file_sha256, sha256_hex
from transforms.operations.model import CASE_SCHEMA

__all__ = [
    "CASE_EXTENSIONS",
    "EvalCaseFiles",
    "case_hashes",
    "commit_operation_results",
    "expand_case_paths",
    "latest_operation_results",
    "read_eval_cases",
    "stored_case_hashes",
]

CASE_EXTENSIONS = (".jsonl", ".ndjson", ".parquet", ".pq")
"""Extensions of eval case files (case-insensitive); folders are searched for these."""


_LINES = (".jsonl", ".ndjson")
_IGNORED = "metadata"
"""A key (column) of free-form data about a case, read past."""


def _unknown_fields(schema: pl.Schema | dict[str, pl.DataType]) -> list[str]:
    """Keys of `schema` that CASE_SCHEMA does not have, nested ones as list.key."""
    unknown = []
    for name, dtype in schema.items():
        if name == _IGNORED:
            continue
        if name not in CASE_SCHEMA:
            unknown.append(name)
            continue
        expected, found = CASE_SCHEMA[name], dtype
        if isinstance(expected, pl.List) and isinstance(found, pl.List):
            inner, found_inner = expected.inner, found.inner
            if isinstance(inner, pl.Struct) and isinstance(found_inner, pl.Struct):
                known = {field.name for field in inner.fields}
                unknown += [f"{name}.{f.name}" for f in found_inner.fields if f.name not in known]
    return unknown


def _check_fields(path: Path, schema: pl.Schema | dict[str, pl.DataType]) -> None:
    unknown = _unknown_fields(schema)
    if unknown:
        raise InputError(
            f"{path}: unknown keys {', '.join(unknown)}; eval cases have "
            f"{', '.join(CASE_SCHEMA)} (snake_case, see docs/operations.md) and may carry "
            f"free-form data under {_IGNORED!r}"
        )


@dataclass(frozen=True)
class EvalCaseFiles:
    """What a read produced.

    Attributes:
        cases: CASE_SCHEMA columns plus source_file and row_number (1-based line or row).
        files: path, size, content_hash and cases, one row per file read.
    """

    cases: pl.DataFrame
    files: pl.DataFrame


def _expand_one(given: str | Path) -> list[Path]:
    text = str(given)
    if any(char in text for char in "*?["):
        matched = [Path(p) for p in sorted(glob.glob(text, recursive=True))]
        return [p for p in matched if p.is_file() and p.suffix.lower() in CASE_EXTENSIONS]
    path = Path(text)
    if path.is_dir():
        return sorted(
            p
            for p in path.rglob("*")
            if p.is_file()
            and p.suffix.lower() in CASE_EXTENSIONS
            and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
    if not path.exists():
        raise InputError(f"eval case input {text} does not exist; check the path")
    if path.suffix.lower() not in CASE_EXTENSIONS:
        raise InputError(
            f"eval case file {text} has an unsupported extension; use one of "
            f"{', '.join(CASE_EXTENSIONS)}"
        )
    return [path]


def expand_case_paths(paths: Sequence[str | Path]) -> list[Path]:
    """The eval case files named by files, folders (recursive) and glob patterns, sorted.

    Raises:
        InputError: no path was given, or a path names nothing readable.
    """
    if not paths:
        raise InputError("no eval case paths given; pass at least one file, folder or glob")
    found: set[Path] = set()
    for given in paths:
        matched = _expand_one(given)
        if not matched:
            raise InputError(f"{given} matches no eval case file ({', '.join(CASE_EXTENSIONS)})")
        found.update(path.resolve() for path in matched)
    return sorted(found, key=str)


def _bad_line(data: bytes) -> str:
    """Where a JSONL file breaks: the first line that is not a case object of CASE_SCHEMA."""
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            return f"line {number} is not valid JSON ({exc.msg})"
        if not isinstance(value, dict):
            return f"line {number} is not a JSON object"
        try:
            pl.read_ndjson(io.BytesIO(line), schema=CASE_SCHEMA)
        except (pl.exceptions.PolarsError, ValueError) as exc:
            return f"line {number} does not fit the eval case schema ({str(exc).splitlines()[0]})"
    return "the file could not be parsed"


def _read_file(path: Path) -> pl.DataFrame:
    if path.suffix.lower() in _LINES:
        data = path.read_bytes()
        if not data.strip():
            return pl.DataFrame(schema=CASE_SCHEMA)
        try:
            frame = pl.read_ndjson(io.BytesIO(data), schema=CASE_SCHEMA)
        except (pl.exceptions.PolarsError, ValueError):
            raise InputError(
                f"{path}: {_bad_line(data)}; docs/operations.md describes the case format"
            ) from None
        try:
            inferred = pl.read_ndjson(io.BytesIO(data), infer_schema_length=None).schema
        except (pl.exceptions.PolarsError, ValueError):
            return frame
        _check_fields(path, inferred)
        return frame
    raw = read_parquet_input(path)
    _check_fields(path, raw.schema)
    return conform_to_schema(
        raw,
        CASE_SCHEMA,
        path=path,
        problem="not a Parquet file of eval cases",
        fix="docs/operations.md describes the columns",
    )


def read_eval_cases(paths: Sequence[str | Path]) -> EvalCaseFiles:
    """Read every eval case file named by `paths`.

    Raises:
        InputError: a file cannot be read or parsed, a case has no case_id, or a case_id
            appears more than once; the message names the file and the line or id.
    """
    frames, files = [], []
    for path in expand_case_paths(paths):
        frame = _read_file(path)
        files.append(
            {
                "path": str(path),
                "size": path.stat().st_size,
                "content_hash": file_sha256(path),
                "cases": frame.height,
            }
        )
        frames.append(
            frame.with_columns(
                source_file=pl.lit(str(path)),
                row_number=pl.int_range(1, frame.height + 1, dtype=pl.Int64),
            )
        )
    cases = pl.concat(frames)
    missing = cases.filter(
        pl.col("case_id").is_null() | (pl.col("case_id").str.strip_chars() == "")
    )
    if missing.height:
        where = ", ".join(
            f"{r['source_file']}:{r['row_number']}" for r in missing.head(5).to_dicts()
        )
        raise InputError(f"{missing.height} cases have no case_id ({where}); give every case one")
    repeated = cases.filter(pl.col("case_id").is_duplicated()).sort("case_id", "source_file")
    if repeated.height:
        ids = repeated["case_id"].unique(maintain_order=True).head(5).to_list()
        raise InputError(
            f"case ids must be unique across the input; {repeated['case_id'].n_unique()} repeat, "
            f"e.g. {', '.join(map(repr, ids))} "
            f"(in {', '.join(repeated['source_file'].unique(maintain_order=True).head(3))})"
        )
    return EvalCaseFiles(cases, pl.DataFrame(files, schema=_FILE_SCHEMA))


_FILE_SCHEMA = {"path": pl.String, "size": pl.Int64, "content_hash": pl.String, "cases": pl.Int64}


def case_hashes(cases: pl.DataFrame) -> pl.Series:
    """SHA-256 of each case's content (every CASE_SCHEMA column), for skipping unchanged cases."""
    encoded = cases.select(pl.struct(list(CASE_SCHEMA)).struct.json_encode()).to_series()
    return sha256_hex(encoded).alias("case_hash")


def stored_case_hashes(store: DuckDBStore, scorer_set: str, set_hash: str) -> pl.DataFrame:
    """case_id and case_hash of the latest results scored with this exact scorer set."""
    return store.sql(
        "SELECT case_id, case_hash FROM latest_operation_cases "
        "WHERE scorer_set = ? AND set_hash = ?",
        [scorer_set, set_hash],
    )


def commit_operation_results(
    store: DuckDBStore, cases: Path, scores: Path, files: pl.DataFrame
) -> None:
    """Insert a run's case rows, score rows (Parquet files) and file rows in one transaction.

    A file already recorded with the same path and content keeps its first row.
    """
    with store.transaction() as con:
        con.execute(
            "INSERT INTO operation_cases BY NAME SELECT * FROM read_parquet(?)", [str(cases)]
        ).fetchall()
        con.execute(
            "INSERT INTO operation_scores BY NAME SELECT * FROM read_parquet(?)", [str(scores)]
        ).fetchall()
        con.register("__operation_files", files)
        try:
            con.execute(
                "INSERT INTO operation_files BY NAME SELECT * FROM __operation_files f "
                "WHERE NOT EXISTS (SELECT 1 FROM operation_files o "
                "WHERE o.path = f.path AND o.content_hash = f.content_hash)"
            ).fetchall()
        finally:
            con.unregister("__operation_files")


def latest_operation_results(
    store: DuckDBStore, scorer_set: str, case_ids: pl.Series
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The latest case rows and score rows of `scorer_set` for the given case ids."""
    wanted = pl.DataFrame({"case_id": case_ids.unique()})
    with store.transaction() as con:
        con.register("__wanted_cases", wanted)
        try:
            cases = con.sql(
                "SELECT c.* FROM latest_operation_cases c SEMI JOIN __wanted_cases USING (case_id) "
                "WHERE c.scorer_set = ? ORDER BY c.source_file, c.row_number",
                params=[scorer_set],
            ).pl()
            scores = con.sql(
                "SELECT s.* FROM latest_operation_scores s "
                "SEMI JOIN __wanted_cases USING (case_id) WHERE s.scorer_set = ?",
                params=[scorer_set],
            ).pl()
        finally:
            con.unregister("__wanted_cases")
    return cases, scores
