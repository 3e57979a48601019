"""Eval case files in: JSONL and Parquet read into CASE_SCHEMA rows, every bad line or file
quarantined with its rule and reason while the rest is read (docs/operations.md, "Input").
"""

from __future__ import annotations

import glob
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from storage.errors import InputError, RecordRejected
from storage.inputs.flat_parquet import conform_to_schema, read_parquet_input
from storage.inputs.json_values import MAX_JSON_DEPTH, nesting_depth, parse_record
from storage.names import path_text
from storage.store.hashing import file_sha256
from transforms.operations.model import CASE_SCHEMA

__all__ = ["expand_case_paths", "read_eval_cases"]

CASE_EXTENSIONS = (".jsonl", ".ndjson", ".parquet", ".pq")
"""Extensions of eval case files (case-insensitive); folders are searched for these."""

CASE_REJECTED_SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "row_number": pl.Int64(),
    "case_id": pl.String(),
    "rule": pl.String(),
    "reason": pl.String(),
}
"""A rejected line (row_number set) or file (row_number null), with its rule and reason."""

_LINES = (".jsonl", ".ndjson")
_IGNORED = "metadata"
"""A key (column) of free-form data about a case, read past."""
_FORMAT = "docs/operations.md describes the case format"


@dataclass(frozen=True)
class EvalCaseFiles:
    """What a read produced.

    Attributes:
        cases: CASE_SCHEMA columns plus source_file and row_number (1-based line or row).
        files: path, size, content_hash and cases, one row per file read.
        rejected: the lines and files quarantined (CASE_REJECTED_SCHEMA).
    """

    cases: pl.DataFrame
    files: pl.DataFrame
    rejected: pl.DataFrame


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


def _unknown_reason(where: str, unknown: list[str]) -> str:
    return (
        f"{where}: unknown keys {', '.join(unknown)}; eval cases have {', '.join(CASE_SCHEMA)} "
        f"(snake_case, see docs/operations.md) and may carry free-form data under {_IGNORED!r}"
    )


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


class _Lines:
    """The cases of one JSONL file, and its rejected lines."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.rows: list[dict[str, Any]] = []
        self.numbers: list[int] = []
        self.rejected: list[dict[str, Any]] = []

    def reject(self, number: int | None, rule: str, reason: str, case_id: Any = None) -> None:
        case = case_id if isinstance(case_id, str) else None
        self.rejected.append(
            {"row_number": number, "case_id": case, "rule": rule, "reason": reason}
        )

    def add(self, number: int, line: str) -> None:
        where = f"{self.name}: line {number}"
        try:
            value = parse_record(line, where)
        except RecordRejected as problem:
            self.reject(number, problem.rule, problem.reason)
            return
        if not isinstance(value, dict):
            self.reject(number, "not_an_object", f"{where} is not a JSON object; {_FORMAT}")
            return
        case_id = value.get("case_id")
        try:
            row = pl.read_ndjson(io.BytesIO(line.encode()), infer_schema_length=None)
            unknown = _unknown_fields(row.schema)
            typed = pl.read_ndjson(io.BytesIO(line.encode()), schema=CASE_SCHEMA)
        except (pl.exceptions.PolarsError, ValueError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            reason = f"{where} does not fit the eval case schema ({first}); {_FORMAT}"
            self.reject(number, "schema_mismatch", reason, case_id)
            return
        if unknown:
            self.reject(number, "unknown_field", _unknown_reason(where, unknown), case_id)
            return
        self.rows.append(typed.row(0, named=True))
        self.numbers.append(number)

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(self.rows, schema=CASE_SCHEMA).with_columns(
            row_number=pl.Series(self.numbers, dtype=pl.Int64)
        )


def _fast_lines(data: bytes, name: str) -> pl.DataFrame | None:
    """The whole file read at once when every line is well-formed, else None (read it a line
    at a time). Polars' reader only sees text whose nesting is within the limit."""
    if nesting_depth(data) > MAX_JSON_DEPTH:
        return None
    try:
        frame = pl.read_ndjson(io.BytesIO(data), schema=CASE_SCHEMA)
        inferred = pl.read_ndjson(io.BytesIO(data), infer_schema_length=None).schema
    except (pl.exceptions.PolarsError, ValueError):
        return None
    if _unknown_fields(inferred):
        return None
    lines = [n for n, line in enumerate(data.split(b"\n"), start=1) if line.strip()]
    return frame.with_columns(row_number=pl.Series(lines, dtype=pl.Int64))


def _read_lines(path: Path, name: str) -> tuple[pl.DataFrame, list[dict[str, Any]]]:
    data = path.read_bytes().removeprefix(b"\xef\xbb\xbf")
    if not data.strip():
        return _no_cases(), []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: not UTF-8 text ({exc}); re-export it as UTF-8") from None
    fast = _fast_lines(data, name)
    if fast is not None:
        return fast, []
    lines = _Lines(name)
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            lines.add(number, line)
    return lines.frame(), lines.rejected


def _file_rejected(rule: str, reason: str) -> list[dict[str, Any]]:
    return [{"row_number": None, "case_id": None, "rule": rule, "reason": reason}]


def _read_parquet(path: Path, name: str) -> tuple[pl.DataFrame, list[dict[str, Any]]]:
    try:
        raw = read_parquet_input(path)
    except InputError as exc:
        return _no_cases(), _file_rejected("unreadable_file", str(exc))
    unknown = _unknown_fields(raw.schema)
    if unknown:
        return _no_cases(), _file_rejected("schema_mismatch", _unknown_reason(name, unknown))
    try:
        frame = conform_to_schema(
            raw,
            CASE_SCHEMA,
            path=Path(name),
            problem="not a Parquet file of eval cases",
            fix="docs/operations.md describes the columns",
        )
    except InputError as exc:
        return _no_cases(), _file_rejected("schema_mismatch", str(exc))
    return frame.with_columns(row_number=pl.int_range(1, frame.height + 1, dtype=pl.Int64)), []


def _no_cases() -> pl.DataFrame:
    return pl.DataFrame(schema={**CASE_SCHEMA, "row_number": pl.Int64()})


def _read_file(path: Path) -> tuple[pl.DataFrame, list[dict[str, Any]]]:
    """One file's cases and rejected lines; a file that cannot be read at all is one rejected
    row with no line number."""
    name = path_text(path)
    try:
        if path.suffix.lower() in _LINES:
            return _read_lines(path, name)
        return _read_parquet(path, name)
    except (InputError, OSError) as exc:
        reason = str(exc) if isinstance(exc, InputError) else f"{name}: cannot be read ({exc})"
        return _no_cases(), _file_rejected("unreadable_file", reason)


def _keys_rejected(cases: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Cases without a case_id, and all but the last of each repeated case_id (in file order,
    as for trace ids), moved from `cases` to rejected rows."""
    missing = pl.col("case_id").is_null() | (pl.col("case_id").str.strip_chars() == "")
    order = pl.col("_order")
    later = (order < order.max().over("case_id")) & ~missing
    rejected = (
        cases.with_row_index("_order")
        .with_columns(
            rule=pl.when(missing)
            .then(pl.lit("missing_case_id"))
            .when(later)
            .then(pl.lit("duplicate_case_id")),
        )
        .filter(pl.col("rule").is_not_null())
    )
    rejected = rejected.select(
        "source_file",
        "row_number",
        "case_id",
        "rule",
        reason=pl.when(pl.col("rule") == "missing_case_id")
        .then(
            pl.format(
                "{}: line {} has no case_id; give every case one", "source_file", "row_number"
            )
        )
        .otherwise(
            pl.format(
                "case_id {} appears again later in the input (the last one is scored); "
                "give every case its own id",
                "case_id",
            )
        ),
    )
    kept = cases.join(
        rejected.select("source_file", "row_number"), on=["source_file", "row_number"], how="anti"
    )
    return kept, rejected


def read_eval_cases(paths: Sequence[str | Path]) -> EvalCaseFiles:
    """Read every eval case file named by `paths`; bad lines, cases and files are returned as
    rejected rows with their rule and reason, never raised.

    Raises:
        InputError: a path names nothing (see `expand_case_paths`).
    """
    frames, files, rejected = [], [], []
    for path in expand_case_paths(paths):
        frame, bad = _read_file(path)
        name = path_text(path)
        try:
            size, digest = path.stat().st_size, file_sha256(path)
        except OSError:
            size, digest = 0, ""
        files.append({"path": name, "size": size, "content_hash": digest, "cases": frame.height})
        frames.append(frame.with_columns(source_file=pl.lit(name)))
        rejected += [{"source_file": name, **row} for row in bad]
    cases = pl.concat(frames).select(*CASE_SCHEMA, "source_file", "row_number")
    cases, keys = _keys_rejected(cases)
    rejected_rows = pl.concat([pl.DataFrame(rejected, schema=CASE_REJECTED_SCHEMA), keys])
    return EvalCaseFiles(cases, pl.DataFrame(files, schema=_FILE_SCHEMA), rejected_rows)


_FILE_SCHEMA = {"path": pl.String, "size": pl.Int64, "content_hash": pl.String, "cases": pl.Int64}
