"""Reading an explicit confidence factors table (Parquet or JSONL, one row per plan step).

Rows that break a rule are returned with the rule and a reason, never dropped; the other rows
of the same trace are held back with rule `trace_has_rejected_rows`, so no trace is scored on
part of its steps. The schema is FACTORS_INPUT_SCHEMA (docs/confidence.md).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from storage._flat_parquet import conform_to_schema, read_parquet_input
from storage.errors import InputError
from storage.hashing import file_sha256

__all__ = [
    "FACTORS_INPUT_SCHEMA",
    "FACTORS_QUARANTINE_SCHEMA",
    "FactorsRead",
    "read_factors_table",
]

FACTORS_INPUT_SCHEMA: dict[str, pl.DataType] = {
    "trace_id": pl.String(),
    "step_index": pl.Int64(),
    "is_search_step": pl.Boolean(),
    "search_result_count": pl.Int64(),
    "search_scores": pl.List(pl.Float64()),
    "tool_calls": pl.Int64(),
    "tool_successes": pl.Int64(),
    "source_count": pl.Int64(),
    "source_answers": pl.List(pl.String()),
    "source_agreement": pl.Float64(),
    "llm_self_eval": pl.Float64(),
    "query_coverage": pl.Float64(),
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
_UNIT = ("source_agreement", "llm_self_eval", "query_coverage")
_COUNTS = ("step_index", "search_result_count", "tool_calls", "tool_successes", "source_count")
_JSON_KINDS: dict[str, tuple[str, type | tuple[type, ...]]] = {
    "trace_id": ("a string", str),
    "step_index": ("an integer", int),
    "is_search_step": ("true or false", bool),
    "search_result_count": ("an integer", int),
    "search_scores": ("a list of numbers", list),
    "tool_calls": ("an integer", int),
    "tool_successes": ("an integer", int),
    "source_count": ("an integer", int),
    "source_answers": ("a list of strings", list),
    "source_agreement": ("a number", (int, float)),
    "llm_self_eval": ("a number", (int, float)),
    "query_coverage": ("a number", (int, float)),
    "query": ("a string", str),
    "answer": ("a string", str),
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
        if value is None or key not in _JSON_KINDS:
            continue
        label, kind = _JSON_KINDS[key]
        if isinstance(value, bool) and kind is not bool:
            return f"{key} must be {label}, received {value!r}"
        if not isinstance(value, kind):
            return f"{key} must be {label}, received {value!r}"
        items: list[Any] = list(value) if isinstance(value, list) else []
        if key == "search_scores" and not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in items
        ):
            return f"search_scores must be a list of numbers, received {value!r}"
        if key == "source_answers" and not all(isinstance(v, str) for v in items):
            return f"source_answers must be a list of strings, received {value!r}"
    return None


def _read_jsonl(path: Path) -> tuple[pl.DataFrame, list[tuple[int, str, str]]]:
    records: list[dict[str, Any]] = []
    numbers: list[int] = []
    rejected: list[tuple[int, str, str]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            rejected.append((number, "invalid_json", f"line {number} is not JSON ({exc.msg})"))
            continue
        if not isinstance(record, dict):
            rejected.append((number, "invalid_json", f"line {number} is not a JSON object"))
            continue
        _check_columns(path, list(record))
        problem = _json_type_error(record)
        if problem is not None:
            rejected.append((number, "wrong_type", problem))
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


def _rules() -> list[tuple[str, pl.Expr, pl.Expr]]:
    """(rule, condition, reason) in the order they are checked; the first that holds wins."""
    return [*_key_rules(), *_count_rules(), *_value_rules()]


def _key_rules() -> list[tuple[str, pl.Expr, pl.Expr]]:
    """A row must say which trace and step it is."""
    return [
        (
            "missing_trace_id",
            pl.col("trace_id").is_null() | (pl.col("trace_id").str.strip_chars() == ""),
            pl.lit("trace_id is missing or empty; give every row the trace it belongs to"),
        ),
        (
            "missing_step_index",
            pl.col("step_index").is_null(),
            pl.lit("step_index is missing; number the plan steps of a trace 0, 1, 2, ..."),
        ),
    ]


def _count_rules() -> list[tuple[str, pl.Expr, pl.Expr]]:
    """Counts are 0 or more, and no more tools succeed than were called."""
    rules = []
    for name in _COUNTS:
        rules.append(
            (
                "negative_count",
                pl.col(name) < 0,
                pl.format(f"{name} is {{}}; counts must be 0 or more", pl.col(name)),
            )
        )
    rules.append(
        (
            "successes_exceed_calls",
            pl.col("tool_successes").fill_null(0) > pl.col("tool_calls").fill_null(0),
            pl.format(
                "tool_successes {} exceeds tool_calls {}",
                pl.col("tool_successes"),
                pl.col("tool_calls").fill_null(0),
            ),
        )
    )
    return rules


def _value_rules() -> list[tuple[str, pl.Expr, pl.Expr]]:
    """Factors lie in [0, 1], and a trace numbers each step once."""
    rules = []
    for name in _UNIT:
        rules.append(
            (
                "out_of_range",
                (pl.col(name) < 0) | (pl.col(name) > 1) | pl.col(name).is_nan(),
                pl.format(f"{name} is {{}}; it must lie in [0, 1]", pl.col(name)),
            )
        )
    outside = (
        pl.col("search_scores")
        .list.eval((pl.element() < 0) | (pl.element() > 1) | pl.element().is_nan())
        .list.any()
    )
    rules.append(
        (
            "out_of_range",
            outside,
            pl.lit("search_scores holds a value outside [0, 1]; relevance scores lie in [0, 1]"),
        )
    )
    rules.append(
        (
            "duplicate_step",
            pl.len().over("trace_id", "step_index") > 1,
            pl.format(
                "trace {} has step_index {} more than once; number each step once",
                pl.col("trace_id"),
                pl.col("step_index"),
            ),
        )
    )
    return rules


def _checked(rows: pl.DataFrame) -> pl.DataFrame:
    rule: pl.Expr = pl.lit(None, pl.String)
    reason: pl.Expr = pl.lit(None, pl.String)
    for name, condition, text in reversed(_rules()):
        holds = condition.fill_null(False)
        rule = pl.when(holds).then(pl.lit(name)).otherwise(rule)
        reason = pl.when(holds).then(text).otherwise(reason)
    checked = rows.with_columns(rule=rule, reason=reason)
    tainted = checked.filter(pl.col("rule").is_not_null() & pl.col("trace_id").is_not_null())
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
            frame, bad = _read_parquet(path), list[tuple[int, str, str]]()
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
        rejected += [
            {"file": str(path), "file_hash": digest, "row_number": n, "rule": rule, "reason": why}
            for n, rule, why in bad
        ]
    checked = _checked(pl.concat(frames, how="vertical"))
    quarantine = pl.concat(
        [
            checked.filter(pl.col("rule").is_not_null()).select(list(FACTORS_QUARANTINE_SCHEMA)),
            pl.DataFrame(rejected, schema=FACTORS_QUARANTINE_SCHEMA),
        ]
    )
    valid = checked.filter(pl.col("rule").is_null()).drop("rule", "reason")
    return FactorsRead(valid, quarantine, pl.DataFrame(files))
