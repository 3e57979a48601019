"""The input rules of docs/input-format.md as Polars expressions.

A record that breaks a rule is quarantined with the first rule it breaks, in
the documented order, and a reason a person can act on. Nothing here reads or
writes files; `partition` is the one function that collects.
"""

from __future__ import annotations

from typing import Any

import polars as pl

__all__ = [
    "QUARANTINE_COLUMNS",
    "RULES",
    "STEP_TYPES",
    "partition",
    "split_duplicates",
    "with_rule",
]

STEP_TYPES = ("thought", "tool_call", "observation", "error_recovery")
"""The step types a trace may contain (seed 000)."""

RULES = (
    "invalid_json",
    "wrong_type",
    "missing_id",
    "invalid_created_at",
    "missing_success",
    "invalid_confidence",
    "missing_objective",
    "unknown_step_type",
    "tool_without_name",
    "duplicate_id",
)
"""Record rules in the order they are checked; the first one broken is reported."""

QUARANTINE_COLUMNS = ("source_file", "row_number", "trace_id", "rule", "reason")
"""Columns of the quarantine frame `partition` returns."""

_READ_COLUMNS = ("read_rule", "read_reason")
_TYPES_TEXT = ", ".join(STEP_TYPES)
_ISO_EXAMPLE = "2024-05-01T12:00:00Z or 2024-05-01T21:00:00+09:00"
_BAD_TYPE = "_bad_type_flags"
_NAMELESS_TOOL = "_nameless_tool_flags"


def _step_flags() -> dict[str, pl.Expr]:
    """Per-step booleans for the two step rules, as temporary list columns."""
    step = pl.element().struct
    return {
        _BAD_TYPE: pl.col("steps").list.eval(
            step.field("type").is_in(list(STEP_TYPES)).not_().fill_null(True)
        ),
        _NAMELESS_TOOL: pl.col("steps").list.eval(
            step.field("tool_present").fill_null(False) & step.field("tool_name").is_null()
        ),
    }


def _shortened(text: pl.Expr, limit: int = 60) -> pl.Expr:
    """Text cut to `limit` characters for a reason, so one huge value cannot flood it."""
    return (
        pl.when(text.str.len_chars() > limit)
        .then(text.str.slice(0, limit - 3) + pl.lit("..."))
        .otherwise(text)
    )


def _first_step(flags: str) -> pl.Expr:
    """0-based index of the first flagged step (only meaningful when one is flagged)."""
    return pl.col(flags).list.arg_max()


def _missing_id_reason() -> pl.Expr:
    """Why a trace has no usable id: missing, or empty (only whitespace)."""
    return (
        pl.when(pl.col("trace_id").is_null())
        .then(pl.lit("id is missing; every trace needs a unique id such as kp:trace:<uuid>"))
        .otherwise(pl.lit("id is empty; every trace needs a unique id such as kp:trace:<uuid>"))
    )


def _created_at_reason() -> pl.Expr:
    """Why `created_at` is unusable: missing, outside the range a UTC timestamp holds (a valid
    time on the last or first day of the calendar, whose offset moves it past year 9999 or
    before year 1), or not ISO-8601."""
    raw = pl.col("created_at_raw")
    at_the_edge = raw.str.strip_chars().str.contains(r"^(9999-12-31|0001-01-01)[T ]\d")
    return (
        pl.when(raw.is_null())
        .then(
            pl.lit(f"metadata.created_at is missing; expected a timestamp such as {_ISO_EXAMPLE}")
        )
        .when(at_the_edge)
        .then(
            pl.format(
                "metadata.created_at '{}' is ISO-8601 but lies outside the timestamps that can "
                "be stored (0001-01-01 to 9999-12-31 in UTC); check the exporter's clock",
                _shortened(raw),
            )
        )
        .otherwise(
            pl.format(
                "metadata.created_at '{}' is not an ISO-8601 timestamp; expected e.g. "
                + _ISO_EXAMPLE,
                _shortened(raw),
            )
        )
    )


def _confidence_reason() -> pl.Expr:
    """Why the confidence is unusable: missing, or not a number in [0, 1]."""
    confidence = pl.col("confidence")
    return (
        pl.when(confidence.is_null())
        .then(pl.lit("outcome.confidence is missing; expected a number in [0, 1]"))
        .otherwise(pl.format("outcome.confidence is {}, expected a number in [0, 1]", confidence))
    )


def _step_type_reason() -> pl.Expr:
    """Which step first has no type or an unknown one, and what it has."""
    type_index = _first_step(_BAD_TYPE)
    step_type = pl.col("steps").list.get(type_index, null_on_oob=True).struct.field("type")
    return (
        pl.when(step_type.is_null())
        .then(pl.format("step {} has no type, expected one of " + _TYPES_TEXT, type_index + 1))
        .otherwise(
            pl.format(
                "step {} has type '{}', expected one of " + _TYPES_TEXT,
                type_index + 1,
                _shortened(step_type),
            )
        )
    )


def _rule_checks() -> list[tuple[str, pl.Expr, pl.Expr]]:
    """(rule, broken, reason) per rule in order; the first, "read", takes `read_rule`."""
    trace_id = pl.col("trace_id")
    confidence = pl.col("confidence")
    return [
        ("read", pl.col("read_rule").is_not_null(), pl.col("read_reason")),
        (
            "missing_id",
            trace_id.is_null() | (trace_id.str.strip_chars() == ""),
            _missing_id_reason(),
        ),
        ("invalid_created_at", pl.col("created_at").is_null(), _created_at_reason()),
        (
            "missing_success",
            pl.col("success").is_null() & ~pl.col("outcome_unknown").fill_null(False),
            pl.lit(
                "metadata.success is missing; expected true or false (or null with "
                "metadata.outcome_unknown true, where the producer recorded no outcome)"
            ),
        ),
        (
            "invalid_confidence",
            confidence.is_null() | confidence.is_nan() | (confidence < 0) | (confidence > 1),
            _confidence_reason(),
        ),
        (
            "missing_objective",
            pl.col("objective").is_null(),
            pl.lit("task.objective is missing; expected a string (an empty string is allowed)"),
        ),
        ("unknown_step_type", pl.col(_BAD_TYPE).list.any(), _step_type_reason()),
        (
            "tool_without_name",
            pl.col(_NAMELESS_TOOL).list.any(),
            pl.format(
                "step {} has a tool with no name; set tool.name on every step that has a tool",
                _first_step(_NAMELESS_TOOL) + 1,
            ),
        ),
    ]


def with_rule(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Canonical rows plus `rule` (null when valid) and `reason`: the first rule broken.

    Rules are checked in the order of docs/input-format.md, starting with the
    reader's own `read_rule`; `duplicate_id` is left to `split_duplicates`.
    """
    (_, read_broken, read_reason), *checks = _rule_checks()
    # Typed Any: the when/then chain changes class (When, Then, ChainedThen) as it grows.
    rule: Any = pl.when(read_broken).then(pl.col("read_rule"))
    reason: Any = pl.when(read_broken).then(read_reason)
    for name, broken, text in checks:
        rule = rule.when(broken).then(pl.lit(name))
        reason = reason.when(broken).then(text)
    return (
        rows.with_columns(**_step_flags())
        .with_columns(
            rule=rule.otherwise(pl.lit(None, dtype=pl.String)),
            reason=reason.otherwise(pl.lit(None, dtype=pl.String)),
        )
        .drop(_BAD_TYPE, _NAMELESS_TOOL)
    )


def split_duplicates(valid: pl.LazyFrame) -> pl.LazyFrame:
    """Mark all but the last valid occurrence of each trace id as `duplicate_id`.

    Input order (the frame's row order: sorted files, then row number) decides:
    the last occurrence is scored, as a re-submission replaces what came
    before. Rows that already broke a rule do not take part. The reason names
    the file and row of the occurrence that is kept and whether the content was
    identical (same `content_hash`).
    """
    ok = pl.col("rule").is_null()

    def kept(column: str) -> pl.Expr:
        return pl.col(column).filter(ok).last().over("trace_id")

    duplicate = ok & (pl.col("_position") != pl.col("_kept_position"))
    where = (pl.col("trace_id"), pl.col("_kept_file"), pl.col("_kept_row"))
    reason = (
        pl.when(pl.col("content_hash") == pl.col("_kept_hash"))
        .then(
            pl.format(
                "id '{}' appears again in {} row {}, which is scored; the content is "
                "identical, so this copy is a no-op",
                *where,
            )
        )
        .otherwise(
            pl.format(
                "id '{}' appears again in {} row {} with different content; that later "
                "occurrence is scored and replaces this one",
                *where,
            )
        )
    )
    return (
        valid.with_columns(_position=pl.int_range(pl.len(), dtype=pl.Int64))
        .with_columns(
            _kept_position=kept("_position"),
            _kept_file=kept("source_file"),
            _kept_row=kept("row_number"),
            _kept_hash=kept("content_hash"),
        )
        .with_columns(
            rule=pl.when(duplicate).then(pl.lit("duplicate_id")).otherwise(pl.col("rule")),
            reason=pl.when(duplicate).then(reason).otherwise(pl.col("reason")),
        )
        .drop("_position", "_kept_position", "_kept_file", "_kept_row", "_kept_hash")
    )


def partition(rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split rows into (valid, quarantine).

    Args:
        rows: Canonical rows from `storage.inputs.readers.read_traces`. When they have
            no `rule` column yet, `with_rule` and `split_duplicates` are applied
            first; a frame that already has one is split as it is.

    Returns:
        The valid rows without `rule`, `reason` and `read_*` columns, and one
        quarantine row per rejected record with `QUARANTINE_COLUMNS`, both in
        input order.
    """
    lazy = rows.lazy()
    if "rule" not in rows.columns:
        lazy = split_duplicates(with_rule(lazy))
    ruled = lazy.collect()
    valid = ruled.filter(pl.col("rule").is_null()).drop(
        ["rule", "reason", *(c for c in _READ_COLUMNS if c in ruled.columns)]
    )
    quarantine = ruled.filter(pl.col("rule").is_not_null()).select(QUARANTINE_COLUMNS)
    return valid, quarantine
