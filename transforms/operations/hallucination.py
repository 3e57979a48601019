"""The anti-hallucination scorer: nothing added, deleted or changed beyond what was expected.

Three checks, each reported with what broke it:

- new blocks: an actual operation on a block the original document does not have (the model
  invented it), or an applied insert beyond the expected inserts at the same block;
- unexpected deletions: an original block deleted although no expected operation deletes it;
- unspecified changes: an original block whose final content differs from its original
  although no expected update, replace or delete targets it.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from transforms.operations._json import CASE, json_items, operation_json, scored_cases
from transforms.operations._kernels import count_in, key_array, rank_within
from transforms.operations.model import OPERATION_TYPES
from transforms.operations.prepare import PreparedCases
from transforms.operations.simulate import Simulation

__all__ = ["anti_hallucination"]

NEW_BLOCK_REASONS = ("unknown block", "unexpected insert")
"""Why an actual operation counts as adding a block."""


def _codes(*names: str) -> list[int]:
    return [OPERATION_TYPES.index(name) for name in names]


def _new_blocks(prepared: PreparedCases, simulation: Simulation) -> pl.DataFrame:
    actual = simulation.actual
    insert = pl.col("type_code").is_in(_codes("insert"))
    inserts = actual.filter(pl.col("applied") & insert)
    keys = key_array(inserts, prepared.block_key())
    allowed = count_in(keys, key_array(prepared.expected.filter(insert), prepared.block_key()))
    beyond = inserts.filter(pl.Series(rank_within(keys) >= allowed))
    unknown = actual.filter(pl.col("target_pos").is_null())
    return pl.concat(
        [
            unknown.with_columns(reason=pl.lit(NEW_BLOCK_REASONS[0])),
            beyond.with_columns(reason=pl.lit(NEW_BLOCK_REASONS[1])),
        ]
    ).sort([CASE, "op_pos"])


def _expected_on(prepared: PreparedCases, blocks: pl.DataFrame, *types: str) -> pl.Series:
    """Whether some expected operation of one of `types` targets each block."""
    targeted = prepared.expected.filter(pl.col("type_code").is_in(_codes(*types)))
    keys = key_array(blocks, prepared.block_key("block_pos"))
    return pl.Series(count_in(keys, key_array(targeted, prepared.block_key())) > 0)


def _unexpected_deletions(prepared: PreparedCases, simulation: Simulation) -> pl.DataFrame:
    """Original blocks deleted although no expected operation deletes them."""
    blocks = simulation.blocks
    return blocks.filter(pl.col("deleted") & ~_expected_on(prepared, blocks, "delete"))


def _unspecified_changes(prepared: PreparedCases, simulation: Simulation) -> pl.DataFrame:
    """Surviving original blocks whose content changed although no expected operation changes it."""
    blocks = simulation.blocks
    edited = blocks.filter(pl.col("edited") & ~pl.col("deleted"))
    return edited.filter(
        (pl.col("result") != pl.col("content"))
        & ~_expected_on(prepared, edited, "update", "replace", "delete")
    )


def _none_per_case(frame: pl.DataFrame, n_cases: int) -> pl.Series:
    """Whether each case has no row in `frame`."""
    return pl.Series(np.bincount(frame[CASE].to_numpy(), minlength=n_cases) == 0)


def _checks(
    cases: pl.DataFrame,
    new_blocks: pl.DataFrame,
    deletions: pl.DataFrame,
    changes: pl.DataFrame,
) -> pl.DataFrame:
    """case_idx, whether each check holds and, per check, the JSON items that broke it."""
    return cases.select(CASE).with_columns(
        _no_new=_none_per_case(new_blocks, cases.height),
        _no_deleted=_none_per_case(deletions, cases.height),
        _only_specified=_none_per_case(changes, cases.height),
        _new=json_items(
            cases,
            new_blocks,
            operation_json(reason=pl.col("reason")),
        ),
        _deleted=json_items(
            cases,
            deletions,
            pl.struct(blockId=pl.col("block_id"), page=pl.col("page"), content=pl.col("content")),
        ),
        _changed=json_items(
            cases,
            changes,
            pl.struct(
                blockId=pl.col("block_id"),
                page=pl.col("page"),
                original=pl.col("content"),
                result=pl.col("result"),
            ),
        ),
    )


def anti_hallucination(prepared: PreparedCases, simulation: Simulation) -> pl.DataFrame:
    """case_idx, score (1 when no check fails, else 0) and details (JSON)."""
    frame = _checks(
        prepared.cases,
        _new_blocks(prepared, simulation),
        _unexpected_deletions(prepared, simulation),
        _unspecified_changes(prepared, simulation),
    )
    clean = pl.col("_no_new") & pl.col("_no_deleted") & pl.col("_only_specified")
    return scored_cases(
        frame,
        pl.when(clean).then(1.0).otherwise(0.0),
        {
            "noNewContent": pl.col("_no_new"),
            "noDeletedBlocks": pl.col("_no_deleted"),
            "onlySpecifiedChanges": pl.col("_only_specified"),
        },
        newBlocks=pl.col("_new"),
        unexpectedDeletions=pl.col("_deleted"),
        unspecifiedChanges=pl.col("_changed"),
    )
