"""Details as JSON text, built column-wise: scalar fields encoded per case, lists per item.

Encoding each list item once and joining the encoded items per case is much cheaper than
aggregating nested lists of structs and encoding those.
"""

from __future__ import annotations

import polars as pl

__all__ = ["CASE", "json_items", "json_string", "operation_json", "scored_cases"]

CASE = "case_idx"
"""The column every table of the operation scorers is keyed by: the case's index."""


def json_string(text: pl.Expr) -> pl.Expr:
    """`text` as a JSON string literal (quoted and escaped); null stays null."""
    return pl.struct(text.alias("v")).struct.json_encode().str.slice(5).str.head(-1)


def json_items(cases: pl.DataFrame, items: pl.DataFrame, item: pl.Expr) -> pl.Series:
    """Per case of `cases`, its items' JSON joined with commas ("" for a case with none).

    `item` is a struct expression (or a JSON string expression) over `items`, whose rows must
    be in list order within each case.
    """
    encoded = item.struct.json_encode() if _is_struct(items, item) else item
    grouped = (
        items.select(CASE, _item=encoded)
        .group_by(CASE, maintain_order=True)
        .agg("_item")
        .with_columns(pl.col("_item").list.join(","))
    )
    return (
        cases.select(CASE)
        .join(grouped, on=CASE, how="left", maintain_order="left")
        .select(pl.col("_item").fill_null(""))
        .to_series()
    )


def _is_struct(frame: pl.DataFrame, expr: pl.Expr) -> bool:
    return isinstance(frame.head(0).select(expr).to_series().dtype, pl.Struct)


def scored_cases(
    frame: pl.DataFrame, score: pl.Expr, scalars: dict[str, pl.Expr], **lists: pl.Expr
) -> pl.DataFrame:
    """A scorer's result: case_idx, score, and details, the JSON object of the fields
    `scalars` (in order) with each list of `lists` (its items' JSON, comma-joined) added."""
    fields = [value.alias(name) for name, value in scalars.items()]
    parts = [pl.struct(fields).struct.json_encode().str.head(-1)]
    for name, items in lists.items():
        parts += [pl.lit(f',"{name}":['), items, pl.lit("]")]
    parts.append(pl.lit("}"))
    return frame.select(CASE, score=score, details=pl.concat_str(parts))


def operation_json(**more: pl.Expr) -> pl.Expr:
    """An operation as it appears in details, with the fields `more` after its own."""
    fields = {
        "index": pl.col("op_pos"),
        "type": pl.col("type"),
        "targetBlockId": pl.col("target_block_id"),
        "targetIndex": pl.col("target_index"),
        "position": pl.col("position"),
        "content": pl.col("content"),
        **more,
    }
    return pl.struct([value.alias(name) for name, value in fields.items()])
