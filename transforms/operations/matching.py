"""Expected against actual operations: the operation accuracy and target block precision scorers.

Both match one to one, so a duplicated operation pairs with one counterpart at most, and both
ignore the order in which the model listed its operations. Targets compare as original blocks:
an operation naming its block by id or by index reaches the same block.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from transforms.operations._json import CASE, json_items, operation_json, scored_cases
from transforms.operations._kernels import NO_KEY, count_in, key_array, pair, rank_within
from transforms.operations.prepare import PreparedCases

__all__ = ["operation_accuracy", "target_block_precision"]

MISMATCH_REASONS = ("position mismatch", "type mismatch", "target mismatch")
"""Why an expected operation found no actual one, in the order they are checked."""

_INSERT = 0


def _per_case(
    prepared: PreparedCases, frame: pl.DataFrame, weights: np.ndarray | None = None
) -> np.ndarray:
    cases = frame[CASE].to_numpy()
    return np.bincount(cases, weights=weights, minlength=prepared.cases.height).astype(np.int64)


def _ratio(hits: pl.Expr, total: pl.Expr, fallback_total: pl.Expr) -> pl.Expr:
    """hits / total; with total 0, 1.0 when `fallback_total` is 0 too, else 0.0."""
    return (
        pl.when(total > 0)
        .then(hits.cast(pl.Float64) / total.cast(pl.Float64))
        .when(fallback_total == 0)
        .then(1.0)
        .otherwise(0.0)
    )


def operation_accuracy(prepared: PreparedCases) -> pl.DataFrame:
    """case_idx, score (matched / expected operations) and details (JSON).

    A match has the same type, the same target block and, for an insert, the same position.
    An unmatched expected operation's reason is checked against the actual operations left
    unmatched: an insert on the same block (so another position), an operation of another
    type on the same block, else none on that block.
    """
    match_key = (prepared.block_key() * 4 + pl.col("type_code")) * 3 + pl.col("pos_code")
    expected_hit, actual_hit = pair(
        key_array(prepared.expected, match_key), key_array(prepared.actual, match_key)
    )
    leftover = prepared.actual.filter(pl.Series(~actual_hit))
    unmatched = prepared.expected.filter(pl.Series(~expected_hit))
    target, typed = prepared.block_key(), prepared.block_key() * 4 + pl.col("type_code")
    on_target = count_in(key_array(unmatched, target), key_array(leftover, target))
    same_type = count_in(key_array(unmatched, typed), key_array(leftover, typed))
    insert = unmatched["type_code"].fill_null(-1).to_numpy() == _INSERT
    reasons = np.where(
        insert & (same_type > 0),
        MISMATCH_REASONS[0],
        np.where(on_target - same_type > 0, MISMATCH_REASONS[1], MISMATCH_REASONS[2]),
    )
    unmatched = unmatched.with_columns(reason=pl.Series(reasons, dtype=pl.String))
    cases = prepared.cases
    matched = _per_case(prepared, prepared.expected, expected_hit.astype(np.float64))
    frame = cases.select(CASE, "n_expected", "n_actual").with_columns(
        _matched=pl.Series(matched),
        _unmatched=json_items(
            cases, unmatched, pl.struct(expected=operation_json(), reason=pl.col("reason"))
        ),
        _extra=json_items(cases, leftover, operation_json()),
    )
    return scored_cases(
        frame,
        _ratio(pl.col("_matched"), pl.col("n_expected"), pl.col("n_actual")),
        {"matchedOperations": pl.col("_matched"), "totalExpectedOperations": pl.col("n_expected")},
        unmatchedOperations=pl.col("_unmatched"),
        extraOperations=pl.col("_extra"),
    )


def _index_keys(expected: pl.DataFrame, actual: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(case, index_eff) as one dense integer per row; NO_KEY where index_eff is null."""
    values = pl.concat([expected["index_eff"], actual["index_eff"]])
    cases = pl.concat([expected[CASE], actual[CASE]]).cast(pl.Int64).to_numpy()
    present = values.is_not_null().to_numpy()
    _, codes = np.unique(values.fill_null(0).to_numpy(), return_inverse=True)
    width = int(codes.max(initial=0)) + 1
    keys = np.where(present, cases * width + codes, NO_KEY)
    return keys[: expected.height], keys[expected.height :]


def _target_json(prefix: str) -> pl.Expr:
    return (
        pl.when(pl.col(f"{prefix}op_pos").is_not_null())
        .then(
            pl.struct(
                index=pl.col(f"{prefix}op_pos"),
                targetBlockId=pl.col(f"{prefix}target_block_id"),
                targetIndex=pl.col(f"{prefix}target_index"),
            )
        )
        .otherwise(None)
    )


def target_block_precision(prepared: PreparedCases) -> pl.DataFrame:
    """case_idx, score (correct / total targets) and details (JSON).

    Expected and actual operations pair first on the same target block, then the rest on the
    same index; a pair is a correct target. The operations left pair in list order as incorrect
    targets, and those beyond the shorter side stand alone. Total = max(expected, actual).
    """
    columns = [CASE, "op_pos", "target_block_id", "target_index", "target_pos", "index_eff"]
    expected, actual = prepared.expected.select(columns), prepared.actual.select(columns)
    by_block = prepared.block_key()
    hit_e, hit_a = pair(key_array(expected, by_block), key_array(actual, by_block))
    expected, actual = expected.filter(pl.Series(~hit_e)), actual.filter(pl.Series(~hit_a))
    hit_e, hit_a = pair(*_index_keys(expected, actual))
    expected, actual = expected.filter(pl.Series(~hit_e)), actual.filter(pl.Series(~hit_a))

    def ranked(frame: pl.DataFrame, prefix: str) -> pl.DataFrame:
        rank = rank_within(frame[CASE].cast(pl.Int64).to_numpy())
        renamed = frame.rename({name: f"{prefix}{name}" for name in columns[1:]})
        return renamed.with_columns(_rank=pl.Series(rank))

    wrong = (
        ranked(expected, "e_")
        .join(ranked(actual, "a_"), on=[CASE, "_rank"], how="full", coalesce=True)
        .sort([CASE, "_rank"])
    )
    cases = prepared.cases
    frame = cases.select(CASE, "n_expected", "n_actual").with_columns(
        _total=pl.max_horizontal("n_expected", "n_actual"),
        _wrong=pl.Series(_per_case(prepared, wrong)),
        _items=json_items(
            cases, wrong, pl.struct(expected=_target_json("e_"), actual=_target_json("a_"))
        ),
    )
    correct = pl.col("_total") - pl.col("_wrong")
    return scored_cases(
        frame,
        pl.when(pl.col("_total") == 0)
        .then(1.0)
        .otherwise(correct.cast(pl.Float64) / pl.col("_total").cast(pl.Float64)),
        {"correctTargets": correct, "totalTargets": pl.col("_total")},
        incorrectTargets=pl.col("_items"),
    )
