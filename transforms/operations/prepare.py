"""Eval cases as long frames: one row per block, operation and pattern, with targets resolved.

Everything the scorers share is computed here once: positions in the lists, the original block
each operation targets, integer codes for keys, and the problems of each case's own data (its
input errors). Only what the eval author wrote can be an input error; the actual operations
are the model's output and are scored, never rejected.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import polars as pl

from transforms.operations._json import CASE
from transforms.operations._kernels import NO_KEY, largest
from transforms.operations.model import OPERATION_TYPES

__all__ = ["PreparedCases", "prepare_cases", "regex_error"]

_POSITION_CODES = {"before": 1, "after": 2}
Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class PreparedCases:
    """The long frames of a batch of cases, each keyed by `case_idx` (the row of the case).

    Attributes:
        cases: case_idx, case_id, duration_ms, the counts n_blocks, n_expected, n_actual,
            n_patterns, and block_offset (row of the case's first block in `blocks`).
        blocks: case_idx, block_pos, block_id, page, content (null read as ""), page_code.
        expected: one row per expected operation: case_idx, op_pos, type, target_block_id,
            target_index, position, content; type_code (null for an unknown type), pos_code
            (0 for other types, 1 before, 2 after, null for an unknown insert position),
            target_pos (position of the targeted original block, null when no block has that
            id), target_row (its row in `blocks`) and index_eff (target_index, else target_pos).
        actual: the same for the actual operations.
        patterns: case_idx, pat_pos, pattern, page, case_insensitive, page_code, page_known and
            regex (the pattern with `(?i)` in front when case-insensitive). Whether a regex
            compiles is found by the search (transforms.operations.content), which compiles
            each distinct regex once.
        errors: case_idx, section, item, message: the input errors found here, one row per
            problem (invalid regexes are added by content.pattern_errors).
        stride: one more than the largest block count; packs (case, block) into one integer.
        page_stride: one more than the largest page code; packs (case, page) likewise.
    """

    cases: pl.DataFrame
    blocks: pl.DataFrame
    expected: pl.DataFrame
    actual: pl.DataFrame
    patterns: pl.DataFrame
    errors: pl.DataFrame
    stride: int
    page_stride: int

    def block_key(self, position: str = "target_pos") -> pl.Expr:
        """case_idx * stride + position: one integer per (case, original block)."""
        return pl.col(CASE).cast(pl.Int64) * self.stride + pl.col(position)


def regex_error(regex: str) -> str | None:
    """Why `regex` does not compile, in the regex engine's own words; None when it does."""
    try:
        pl.select(pl.lit("").str.contains(pl.lit(regex), strict=True))
    except pl.exceptions.ComputeError as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        reasons = [
            line.removeprefix("error:").strip() for line in lines if line.startswith("error:")
        ]
        return reasons[0] if reasons else lines[0]
    return None


def _long(cases: pl.DataFrame, column: str, position: str) -> pl.DataFrame:
    """One row per list element (empty and null lists give none), with its list position."""
    lengths = cases[column].list.len().fill_null(0).to_numpy().astype(np.int64)
    rows = cases.select(CASE, column).explode(column, keep_nulls=False).unnest(column)
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return rows.with_columns(pl.Series(position, np.arange(rows.height) - starts))


def _codes(*columns: pl.Series) -> list[Ints]:
    """Integer codes of strings, equal strings equal codes across the columns; null gives -1."""
    joined = pl.concat([column.cast(pl.String) for column in columns])
    physical = joined.cast(pl.Categorical).to_physical().cast(pl.Int64).fill_null(-1).to_numpy()
    bounds = np.cumsum([0, *(len(column) for column in columns)])
    return [physical[start:end] for start, end in zip(bounds[:-1], bounds[1:], strict=True)]


def _resolve(
    ops: pl.DataFrame,
    id_codes: Ints,
    block_keys: Ints,
    first: tuple[Ints, Ints],
    width: int,
    cases: pl.DataFrame,
) -> pl.DataFrame:
    """Add the target columns; `first` holds the sorted distinct block keys and first rows."""
    case = ops[CASE].to_numpy().astype(np.int64)
    n_blocks = cases["n_blocks"].to_numpy()[case]
    offsets = cases["block_offset"].to_numpy()[case]
    index = ops["target_index"].fill_null(-1).to_numpy()
    has_index = ops["target_index"].is_not_null().to_numpy()
    in_range = has_index & (index >= 0) & (index < n_blocks)
    all_keys = np.full(len(block_keys) + 1, NO_KEY, dtype=np.int64)
    all_keys[:-1] = block_keys
    at_index = all_keys[np.where(in_range, offsets + index, len(block_keys))]
    key = np.where(id_codes >= 0, case * width + id_codes, at_index)
    unique_keys, first_rows = first
    row = np.full(len(key), -1, dtype=np.int64)
    if len(unique_keys):
        slot = np.clip(np.searchsorted(unique_keys, key), 0, len(unique_keys) - 1)
        found = (key != NO_KEY) & (unique_keys[slot] == key)
        row = np.where(found, first_rows[slot], -1)
    found = pl.col("_row") >= 0
    position = pl.col("position")
    return (
        ops.with_columns(
            _row=pl.Series(row), _offset=pl.Series(offsets), in_range=pl.Series(in_range)
        )
        .with_columns(
            target_row=pl.when(found).then(pl.col("_row")),
            target_pos=pl.when(found).then(pl.col("_row") - pl.col("_offset")),
            type_code=_type_code(pl.col("type")),
            pos_code=pl.when(pl.col("type") != "insert")
            .then(pl.lit(0, dtype=pl.Int64))
            .when(position.is_null() | (position == "after"))
            .then(pl.lit(_POSITION_CODES["after"], dtype=pl.Int64))
            .when(position == "before")
            .then(pl.lit(_POSITION_CODES["before"], dtype=pl.Int64)),
        )
        .with_columns(index_eff=pl.coalesce("target_index", "target_pos"))
        .drop("_row", "_offset")
    )


def _type_code(kind: pl.Expr) -> pl.Expr:
    """The position of the type in OPERATION_TYPES; null for any other value."""
    code: pl.Expr = pl.lit(None, dtype=pl.Int64)
    for number, name in reversed(list(enumerate(OPERATION_TYPES))):
        code = pl.when(kind == name).then(pl.lit(number, dtype=pl.Int64)).otherwise(code)
    return code


def _error(section: int, item: str, message: pl.Expr) -> list[pl.Expr]:
    return [
        pl.col(CASE),
        pl.lit(section, dtype=pl.Int64).alias("section"),
        pl.col(item).cast(pl.Int64).alias("item"),
        message.alias("message"),
    ]


def _expected_errors(expected: pl.DataFrame, cases: pl.DataFrame) -> pl.DataFrame:
    op = pl.format("expected operation {}", pl.col("op_pos"))
    types = pl.lit(", ".join(OPERATION_TYPES))
    has_id, has_index = (
        pl.col("target_block_id").is_not_null(),
        pl.col("target_index").is_not_null(),
    )
    target = pl.col("target_block_id")
    checks = [
        (pl.col("type").is_null(), pl.format("{} has no type; use one of {}", op, types)),
        (
            pl.col("type").is_not_null() & pl.col("type_code").is_null(),
            pl.format("{} has type '{}'; use one of {}", op, pl.col("type"), types),
        ),
        (
            (pl.col("type") == "insert") & pl.col("pos_code").is_null(),
            pl.format(
                "{} has position '{}'; use before or after (or leave it out for after)",
                op,
                pl.col("position"),
            ),
        ),
        (~has_id & ~has_index, pl.format("{} has neither target_block_id nor target_index", op)),
        (
            ~has_id & has_index & ~pl.col("in_range"),
            pl.format(
                "{} has target_index {}, outside the {} original blocks",
                op,
                pl.col("target_index"),
                pl.col("n_blocks"),
            ),
        ),
        (
            has_id & pl.col("target_pos").is_null(),
            pl.format("{} targets block '{}', which is not among the original blocks", op, target),
        ),
        (
            has_id & has_index & (pl.col("target_index") != pl.col("target_pos")),
            pl.format(
                "{} targets block '{}' at index {} but gives target_index {}",
                op,
                target,
                pl.col("target_pos"),
                pl.col("target_index"),
            ),
        ),
    ]
    rows = expected.join(cases.select(CASE, "n_blocks"), on=CASE, how="left", maintain_order="left")
    return pl.concat(
        [
            rows.filter(condition.fill_null(False)).select(_error(1, "op_pos", message))
            for condition, message in checks
        ]
    )


def _pattern_errors(patterns: pl.DataFrame) -> pl.DataFrame:
    number = pl.col("pat_pos")
    checks = [
        (pl.col("pattern").is_null(), pl.format("expected pattern {} has no pattern", number)),
        (
            pl.col("page").is_not_null() & ~pl.col("page_known"),
            pl.format(
                "expected pattern {} names page '{}', which no original block is on",
                number,
                pl.col("page"),
            ),
        ),
    ]
    return pl.concat([patterns.filter(c).select(_error(2, "pat_pos", m)) for c, m in checks])


def _summary(indexed: pl.DataFrame) -> pl.DataFrame:
    """The `cases` frame of PreparedCases: ids, durations, list lengths and block offsets."""

    def count(column: str) -> pl.Expr:
        return pl.col(column).list.len().fill_null(0).cast(pl.Int64)

    return indexed.select(
        CASE,
        "case_id",
        "duration_ms",
        n_blocks=count("original_blocks"),
        n_expected=count("expected_operations"),
        n_actual=count("actual_operations"),
        n_patterns=count("expected_patterns"),
    ).with_columns(block_offset=pl.col("n_blocks").cum_sum() - pl.col("n_blocks"))


def _with_targets(
    blocks: pl.DataFrame, expected: pl.DataFrame, actual: pl.DataFrame, summary: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame, Ints, Ints]:
    """The expected and actual operations with their targets resolved.

    Also returns, per distinct (case, block id), the row of its first block and how many blocks
    carry it, since a repeated id is an input error.
    """
    block_ids, expected_ids, actual_ids = _codes(
        blocks["block_id"], expected["target_block_id"], actual["target_block_id"]
    )
    width = (
        int(max(block_ids.max(initial=0), expected_ids.max(initial=0), actual_ids.max(initial=0)))
        + 1
    )
    case = blocks[CASE].to_numpy().astype(np.int64)
    block_keys = np.where(block_ids >= 0, case * width + block_ids, NO_KEY)
    unique_keys, first_rows, times = np.unique(block_keys, return_index=True, return_counts=True)
    keep = unique_keys != NO_KEY
    unique_keys, first_rows, times = unique_keys[keep], first_rows[keep], times[keep]
    first = (unique_keys, first_rows)
    return (
        _resolve(expected, expected_ids, block_keys, first, width, summary),
        _resolve(actual, actual_ids, block_keys, first, width, summary),
        first_rows,
        times,
    )


def _with_pages(
    blocks: pl.DataFrame, patterns: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """Blocks and patterns with their page columns, and the page stride.

    Blocks gain page_code; patterns gain page_code, page_known and regex, with
    case_insensitive read as False when null.
    """
    block_pages, pattern_pages = _codes(blocks["page"], patterns["page"])
    pages = int(max(block_pages.max(initial=0), pattern_pages.max(initial=0))) + 1
    case = blocks[CASE].to_numpy().astype(np.int64)
    page_keys = np.where(block_pages >= 0, case * pages + block_pages, NO_KEY)
    pattern_case = patterns[CASE].to_numpy().astype(np.int64)
    known = np.isin(pattern_case * pages + pattern_pages, page_keys) & (pattern_pages >= 0)
    blocks = blocks.with_columns(page_code=pl.Series(block_pages).replace(-1, None))
    patterns = patterns.with_columns(
        pl.col("case_insensitive").fill_null(False),
        page_code=pl.Series(pattern_pages).replace(-1, None),
        page_known=pl.Series(known),
        regex=pl.when(pl.col("case_insensitive").fill_null(False))
        .then(pl.lit("(?i)") + pl.col("pattern"))
        .otherwise(pl.col("pattern")),
    )
    return blocks, patterns, pages


def _block_errors(blocks: pl.DataFrame, first_rows: Ints, times: Ints) -> pl.DataFrame:
    """Input errors of the original blocks: blocks without an id, then repeated ids."""
    repeated_rows = first_rows[times > 1]
    repeated = blocks[repeated_rows].with_columns(times=pl.Series(times[times > 1]))
    return pl.concat(
        [
            blocks.filter(pl.col("block_id").is_null()).select(
                _error(
                    0, "block_pos", pl.format("original block {} has no id", pl.col("block_pos"))
                )
            ),
            repeated.select(
                _error(
                    0,
                    "block_pos",
                    pl.format(
                        "block id '{}' appears {} times in original_blocks; block ids must be "
                        "unique within a case",
                        pl.col("block_id"),
                        pl.col("times"),
                    ),
                )
            ),
        ]
    )


def prepare_cases(cases: pl.DataFrame) -> PreparedCases:
    """Explode a frame of eval cases (CASE_SCHEMA columns) into the long frames scorers use."""
    indexed = cases.with_row_index(CASE)
    summary = _summary(indexed)
    stride = largest(summary["n_blocks"]) + 1
    blocks = _long(indexed, "original_blocks", "block_pos").rename({"id": "block_id"})
    blocks = blocks.with_columns(pl.col("content").fill_null(""))
    expected, actual, first_rows, times = _with_targets(
        blocks,
        _long(indexed, "expected_operations", "op_pos"),
        _long(indexed, "actual_operations", "op_pos"),
        summary,
    )
    blocks, patterns, pages = _with_pages(blocks, _long(indexed, "expected_patterns", "pat_pos"))
    errors = pl.concat(
        [
            _block_errors(blocks, first_rows, times),
            _expected_errors(expected, summary),
            _pattern_errors(patterns),
        ]
    )
    return PreparedCases(summary, blocks, expected, actual, patterns, errors, stride, pages)
