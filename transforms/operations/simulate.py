"""Applying the actual operations to the original blocks, for every case at once.

The operations of a case apply in list order. Every target is an original block (an inserted
block has no id an operation could name), so the sequential result has a closed form: an
operation applies when its type is known, its target is an original block not deleted by an
earlier operation, and, for an insert, its position is before or after. The final document
lists, for each original block in order, the inserts before it (in operation order), the block
unless deleted (with the content of the last update or replace applied to it), and the inserts
after it (in reverse operation order, since each lands right after the block).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from transforms.operations._json import CASE
from transforms.operations._kernels import NO_KEY, key_array, largest
from transforms.operations.model import OPERATION_TYPES
from transforms.operations.prepare import PreparedCases

__all__ = ["Simulation", "simulate"]

FAILURE_REASONS = ("invalid type", "unknown block", "invalid position", "block already deleted")
"""Why an actual operation did not apply, in the order they are checked."""

_DELETE = OPERATION_TYPES.index("delete")
_EDITS = (OPERATION_TYPES.index("update"), OPERATION_TYPES.index("replace"))
_INSERT = OPERATION_TYPES.index("insert")


@dataclass(frozen=True)
class Simulation:
    """The actual operations applied to the original blocks.

    Attributes:
        actual: the prepared actual operations with `applied` and `failure` (a FAILURE_REASONS
            entry, null when applied).
        blocks: the prepared blocks with `result` (final content), `edited` (an update or
            replace applied to it) and `deleted`.
        document: the final blocks of every case in document order: case_idx, page_code,
            content (inserted blocks take the page of the block they were inserted at).
    """

    actual: pl.DataFrame
    blocks: pl.DataFrame
    document: pl.DataFrame


def _deleted_earlier(prepared: PreparedCases) -> np.ndarray:
    """Whether an earlier operation of the case deletes the operation's (existing) target."""
    actual = prepared.actual
    keys = key_array(actual, prepared.block_key())
    positions = actual["op_pos"].to_numpy()
    deletes = (actual["type_code"].fill_null(-1).to_numpy() == _DELETE) & (keys != NO_KEY)
    delete_keys, first = np.unique(keys[deletes], return_index=True)
    if not len(delete_keys):
        return np.zeros(len(keys), dtype=bool)
    first_position = positions[deletes][first]
    slot = np.clip(np.searchsorted(delete_keys, keys), 0, len(delete_keys) - 1)
    return (keys != NO_KEY) & (delete_keys[slot] == keys) & (positions > first_position[slot])


def _outcomes(prepared: PreparedCases) -> pl.DataFrame:
    failure = (
        pl.when(pl.col("type_code").is_null())
        .then(pl.lit(FAILURE_REASONS[0]))
        .when(pl.col("target_pos").is_null())
        .then(pl.lit(FAILURE_REASONS[1]))
        .when(pl.col("pos_code").is_null())
        .then(pl.lit(FAILURE_REASONS[2]))
        .when(pl.col("_gone"))
        .then(pl.lit(FAILURE_REASONS[3]))
    )
    return (
        prepared.actual.with_columns(_gone=pl.Series(_deleted_earlier(prepared)))
        .with_columns(failure=failure)
        .with_columns(applied=pl.col("failure").is_null())
        .drop("_gone")
    )


def _in_document_order(rows: pl.DataFrame, prepared: PreparedCases) -> pl.DataFrame:
    """Rows sorted by (case, anchor, slot, order), on one packed integer when it fits."""
    span = 2 * largest(prepared.cases["n_actual"]) + 1
    if prepared.cases.height * prepared.stride * 3 * span < 2**62:
        anchor = pl.col(CASE).cast(pl.Int64) * prepared.stride + pl.col("anchor")
        rows = rows.with_columns(_order=(anchor * 3 + pl.col("slot")) * span + pl.col("order"))
        rows = rows.sort("_order")
    else:
        rows = rows.sort([CASE, "anchor", "slot", "order"])
    return rows.select(CASE, "page_code", "content")


def simulate(prepared: PreparedCases) -> Simulation:
    """Apply every case's actual operations to its original blocks."""
    outcomes = _outcomes(prepared)
    applied = outcomes.filter(pl.col("applied"))
    code = pl.col("type_code")
    edits = applied.filter(code.is_in(_EDITS)).unique(
        "target_row", keep="last", maintain_order=True
    )
    result = (
        prepared.blocks["content"]
        .clone()
        .scatter(edits["target_row"], edits["content"].fill_null(""))
    )
    edited = np.zeros(prepared.blocks.height, dtype=bool)
    edited[edits["target_row"].to_numpy()] = True
    deleted = np.zeros(prepared.blocks.height, dtype=bool)
    deleted[applied.filter(code == _DELETE)["target_row"].to_numpy()] = True
    blocks = prepared.blocks.with_columns(
        result=result, edited=pl.Series(edited), deleted=pl.Series(deleted)
    )
    kept = blocks.filter(~pl.col("deleted")).select(
        CASE,
        pl.col("block_pos").alias("anchor"),
        pl.lit(1, dtype=pl.Int64).alias("slot"),
        pl.lit(0, dtype=pl.Int64).alias("order"),
        "page_code",
        pl.col("result").alias("content"),
    )
    inserts = applied.filter(code == _INSERT)
    before = pl.col("pos_code") == 1
    inserted = inserts.select(
        CASE,
        pl.col("target_pos").alias("anchor"),
        pl.when(before).then(0).otherwise(2).cast(pl.Int64).alias("slot"),
        pl.when(before).then(pl.col("op_pos")).otherwise(-pl.col("op_pos")).alias("order"),
        page_code=blocks["page_code"].gather(inserts["target_row"]),
        content=pl.col("content").fill_null(""),
    )
    document = pl.concat([kept, inserted])
    return Simulation(outcomes, blocks, _in_document_order(document, prepared))
