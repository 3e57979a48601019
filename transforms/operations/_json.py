"""Details as JSON text, built column-wise: scalar fields encoded per case, lists per item.

Encoding each list item once and joining the encoded items per case is much cheaper than
aggregating nested lists of structs and encoding those.
"""

from __future__ import annotations

import polars as pl

__all__ = ["details_json", "json_items", "json_string"]

_CASE = "case_idx"


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
        items.select(_CASE, _item=encoded)
        .group_by(_CASE, maintain_order=True)
        .agg("_item")
        .with_columns(pl.col("_item").list.join(","))
    )
    return (
        cases.select(_CASE)
        .join(grouped, on=_CASE, how="left", maintain_order="left")
        .select(pl.col("_item").fill_null(""))
        .to_series()
    )


def _is_struct(frame: pl.DataFrame, expr: pl.Expr) -> bool:
    return isinstance(frame.head(0).select(expr).to_series().dtype, pl.Struct)


def details_json(scalars: pl.Expr, **lists: pl.Expr) -> pl.Expr:
    """The JSON object of the struct `scalars` with each list (items' JSON, comma-joined) added."""
    parts = [scalars.struct.json_encode().str.head(-1)]
    for name, items in lists.items():
        parts += [pl.lit(f',"{name}":['), items, pl.lit("]")]
    parts.append(pl.lit("}"))
    return pl.concat_str(parts)
