"""Reading an explicit confidence factors table (Parquet or JSONL, one row per plan step).

A row names GRACE's ConfidenceFactors fields, or the conveniences that fill them
(transforms.confidence.inputs). Rows that break a rule are returned with the rule, a reason and
the keys they have (trace_id, step_index), never dropped; the other rows of the same trace are
held back with rule `trace_has_rejected_rows`, so no trace is scored on part of its steps. The
schema is FACTORS_INPUT_SCHEMA (docs/confidence.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from storage.errors import InputError, RecordRejected
from storage.inputs.flat_parquet import conform_to_schema, read_parquet_input
from storage.inputs.json_values import parse_record
from storage.store.hashing import file_sha256
from transforms.confidence.batch import FACTOR_SCHEMA
from transforms.confidence.factor_rules import row_rules

__all__ = ["FACTORS_INPUT_SCHEMA", "read_factors_table"]

_KEYS = ("trace_id", "step_index")

FACTORS_INPUT_SCHEMA: dict[str, pl.DataType] = {
    "trace_id": pl.String(),
    "step_index": pl.Int64(),
    **{name: dtype for name, dtype in FACTOR_SCHEMA.items() if name not in _KEYS},
    "search_scores": pl.List(pl.Float64()),
    "tool_calls": pl.Int64(),
    "tool_successes": pl.Int64(),
    "llm_self_eval": pl.Float64(),
    "source_answers": pl.List(pl.String()),
    "query": pl.String(),
    "answer": pl.String(),
}
"""Columns of a factors table; only trace_id and step_index are required."""

FACTORS_QUARANTINE_SCHEMA: dict[str, pl.DataType] = {
    "file": pl.String(),
    "file_hash": pl.String(),
    "row_number": pl.Int64(),
    "trace_id": pl.String(),
    "step_index": pl.Int64(),
    "rule": pl.String(),
    "reason": pl.String(),
}

_EXTENSIONS = (".parquet", ".pq", ".jsonl", ".ndjson")
_JSON_KINDS: dict[type[pl.DataType], tuple[str, type | tuple[type, ...]]] = {
    pl.String: ("a string", str),
    pl.Int64: ("an integer", int),
    pl.Boolean: ("true or false", bool),
    pl.Float64: ("a number", (int, float)),
}
_LIST_ITEMS: dict[str, tuple[str, type | tuple[type, ...]]] = {
    "search_scores": ("a list of numbers", (int, float)),
    "source_answers": ("a list of strings", str),
}


@dataclass(frozen=True)
class FactorsRead:
    """A read of factors files.

    Attributes:
        rows: valid rows, FACTORS_INPUT_SCHEMA plus file, file_hash, row_number (1-based).
        quarantine: rejected rows (FACTORS_QUARANTINE_SCHEMA).
        files: path, content_hash, size, rows per file.
    """

    rows: pl.DataFrame
    quarantine: pl.DataFrame
    files: pl.DataFrame


def _expand(paths: Sequence[str]) -> list[Path]:
    found: set[Path] = set()
    for given in paths:
        path = Path(given)
        if path.is_dir():
            matched = [p for p in path.rglob("*") if p.suffix.lower() in _EXTENSIONS]
        elif path.exists():
            if path.suffix.lower() not in _EXTENSIONS:
                raise InputError(
                    f"factors file {path} has an unsupported extension; use one of "
                    f"{', '.join(_EXTENSIONS)}"
                )
            matched = [path]
        else:
            raise InputError(f"factors input {given} does not exist; check the path")
        if not matched:
            raise InputError(f"{given} holds no factors file ({', '.join(_EXTENSIONS)})")
        found.update(p.resolve() for p in matched)
    if not found:
        raise InputError("no factors paths given; pass at least one file or folder")
    return sorted(found, key=str)


def _check_columns(path: Path, names: Sequence[str]) -> None:
    unknown = [name for name in names if name not in FACTORS_INPUT_SCHEMA]
    if unknown:
        raise InputError(
            f"{path}: unknown columns {', '.join(unknown)}; a factors table has "
            f"{', '.join(FACTORS_INPUT_SCHEMA)} (see docs/confidence.md)"
        )


def _json_type_error(record: dict[str, Any]) -> str | None:
    for key, value in record.items():
        if value is None:
            continue
        if key in _LIST_ITEMS:
            label, item = _LIST_ITEMS[key]
            good = isinstance(value, list) and all(
                isinstance(v, item) and not isinstance(v, bool) for v in value
            )
        else:
            label, kind = _JSON_KINDS[type(FACTORS_INPUT_SCHEMA[key])]
            good = isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
            if good and kind is int and not -(2**63) <= value < 2**63:
                return f"{key} is {value}, outside the 64-bit integers a factors table holds"
        if not good:
            return f"{key} must be {label}, received {value!r}"
    return None


def _keys(record: dict[str, Any]) -> dict[str, Any]:
    """The trace_id and step_index a rejected record has, where they have their types."""
    trace_id, step_index = record.get("trace_id"), record.get("step_index")
    return {
        "trace_id": trace_id if isinstance(trace_id, str) and trace_id.strip() else None,
        "step_index": step_index
        if isinstance(step_index, int)
        and not isinstance(step_index, bool)
        and -(2**63) <= step_index < 2**63
        else None,
    }


def _read_jsonl(path: Path) -> tuple[pl.DataFrame, list[dict[str, Any]]]:
    """The file's valid records, and its rejected lines (row_number, keys, rule, reason)."""
    records: list[dict[str, Any]] = []
    numbers: list[int] = []
    rejected: list[dict[str, Any]] = []
    try:
        text = path.read_bytes().removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: not UTF-8 text ({exc}); a factors table is JSON Lines or Parquet "
            "(a compressed file must be decompressed first)"
        ) from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = parse_record(line, f"line {number}")
        except RecordRejected as unreadable:
            rejected.append(
                {"row_number": number, "rule": unreadable.rule, "reason": unreadable.reason}
            )
            continue
        if not isinstance(record, dict):
            why = f"line {number} is not a JSON object"
            rejected.append({"row_number": number, "rule": "invalid_json", "reason": why})
            continue
        _check_columns(path, list(record))
        problem = _json_type_error(record)
        if problem is not None:
            rejected.append(
                {"row_number": number, **_keys(record), "rule": "wrong_type", "reason": problem}
            )
            continue
        records.append(record)
        numbers.append(number)
    frame = pl.DataFrame(records, schema=FACTORS_INPUT_SCHEMA, strict=False)
    return frame.with_columns(row_number=pl.Series(numbers, dtype=pl.Int64)), rejected


def _read_parquet(path: Path) -> pl.DataFrame:
    raw = read_parquet_input(path)
    _check_columns(path, raw.columns)
    frame = conform_to_schema(
        raw,
        FACTORS_INPUT_SCHEMA,
        path=path,
        problem="a column has the wrong type",
        fix="docs/confidence.md lists the column types",
    )
    return frame.with_columns(row_number=pl.int_range(1, raw.height + 1, dtype=pl.Int64))


def _checked(rows: pl.DataFrame, rejected: pl.DataFrame) -> pl.DataFrame:
    """`rows` with the rule and reason of the first rule each breaks (null when none); a row
    of a trace that has a rejected row, here or among the `rejected` records, is held back."""
    rule: pl.Expr = pl.lit(None, pl.String)
    reason: pl.Expr = pl.lit(None, pl.String)
    for name, condition, text in reversed(row_rules()):
        holds = condition.fill_null(False)
        rule = pl.when(holds).then(pl.lit(name)).otherwise(rule)
        reason = pl.when(holds).then(text).otherwise(reason)
    checked = rows.with_columns(rule=rule, reason=reason)
    tainted = pl.concat(
        [
            checked.filter(pl.col("rule").is_not_null()).select("trace_id"),
            rejected.select("trace_id"),
        ]
    ).drop_nulls()
    held = pl.col("rule").is_null() & pl.col("trace_id").is_in(tainted["trace_id"].implode())
    return checked.with_columns(
        rule=pl.when(held).then(pl.lit("trace_has_rejected_rows")).otherwise("rule"),
        reason=pl.when(held)
        .then(pl.lit("another row of this trace was rejected; fix that row to score the trace"))
        .otherwise("reason"),
    )


def read_factors_table(paths: Sequence[str]) -> FactorsRead:
    """Read and check every factors file named by `paths` (files or folders).

    Raises:
        InputError: a path names nothing readable, a file is not Parquet, or a file has
            unknown columns or a column of the wrong type.
    """
    frames: list[pl.DataFrame] = []
    rejected: list[dict[str, Any]] = []
    files: list[dict[str, Any]] = []
    for path in _expand(paths):
        digest = file_sha256(path)
        if path.suffix.lower() in (".parquet", ".pq"):
            frame, bad = _read_parquet(path), list[dict[str, Any]]()
        else:
            frame, bad = _read_jsonl(path)
        files.append(
            {
                "path": str(path),
                "content_hash": digest,
                "size": path.stat().st_size,
                "rows": frame.height + len(bad),
            }
        )
        frames.append(frame.with_columns(file=pl.lit(str(path)), file_hash=pl.lit(digest)))
        rejected += [{"file": str(path), "file_hash": digest, **record} for record in bad]
    unread = pl.DataFrame(rejected, schema=FACTORS_QUARANTINE_SCHEMA)
    checked = _checked(pl.concat(frames, how="vertical"), unread)
    quarantine = pl.concat(
        [
            checked.filter(pl.col("rule").is_not_null()).select(list(FACTORS_QUARANTINE_SCHEMA)),
            unread,
        ]
    )
    valid = checked.filter(pl.col("rule").is_null()).drop("rule", "reason")
    return FactorsRead(valid, quarantine, pl.DataFrame(files))
