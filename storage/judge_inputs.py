"""Inputs of the judge: (item_id, user_query, submission) from stored traces or a table file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from storage.duckdb_store import DuckDBStore
from storage.errors import InputError

__all__ = ["judge_items_from_table", "judge_items_from_traces"]


def judge_items_from_traces(
    store: DuckDBStore, user_query: str, submission: str, trace_ids: Sequence[str] | None = None
) -> pl.DataFrame:
    """(item_id, user_query, submission) of stored traces, from the configured columns."""
    columns = store.columns("traces")
    for name in (user_query, submission):
        if name not in columns:
            raise InputError(
                f"the traces table has no column {name!r} to judge; use one of "
                f"{', '.join(columns)} in [inputs] of the judge configuration"
            )
    query = (
        f'SELECT trace_id AS item_id, CAST("{user_query}" AS VARCHAR) AS user_query, '
        f'CAST("{submission}" AS VARCHAR) AS submission FROM traces'
    )
    if trace_ids is None:
        return store.sql(query + " ORDER BY trace_id")
    wanted = pl.DataFrame({"trace_id": list(trace_ids)}, schema={"trace_id": pl.String})
    with store.transaction() as con:
        con.register("__judge_traces", wanted)
        try:
            return con.sql(
                query + " SEMI JOIN __judge_traces USING (trace_id) ORDER BY trace_id"
            ).pl()
        finally:
            con.unregister("__judge_traces")


def judge_items_from_table(path: str | Path) -> pl.DataFrame:
    """(item_id, user_query, submission) from a CSV, JSONL or Parquet table with columns
    id, user_query and submission.

    Raises:
        InputError: the file is missing, of another type, lacks a column, or repeats an id.
    """
    source = Path(path)
    suffix = source.suffix.lower()
    if suffix not in (".csv", ".parquet", ".jsonl"):
        raise InputError(
            f"judge table {source} has extension {source.suffix!r}; use .csv, .jsonl or .parquet"
        )
    if not source.exists():
        raise InputError(f"judge table {source} does not exist")
    if suffix == ".csv":
        frame = pl.read_csv(source)
    elif suffix == ".parquet":
        frame = pl.read_parquet(source)
    else:
        frame = pl.read_ndjson(source)
    missing = [c for c in ("id", "user_query", "submission") if c not in frame.columns]
    if missing:
        raise InputError(
            f"judge table {source} lacks column(s) {', '.join(missing)}; it needs id, "
            f"user_query and submission (found {', '.join(frame.columns)})"
        )
    items = frame.select(
        pl.col("id").cast(pl.String).alias("item_id"),
        pl.col("user_query").cast(pl.String).fill_null(""),
        pl.col("submission").cast(pl.String),
    )
    repeated = items.filter(pl.col("item_id").is_duplicated())["item_id"].unique().sort()
    if repeated.len():
        raise InputError(
            f"judge table {source} repeats id(s) {', '.join(repeated.head(5).to_list())}; "
            "give each row a distinct id"
        )
    return items
