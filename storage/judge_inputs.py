"""Inputs of the judge: (item_id, user_query, submission) from stored traces or a table file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from storage._json_values import RecordProblem, parse_record
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


def _jsonl_table(source: Path) -> pl.DataFrame:
    """A JSONL table read a line at a time, so a bad line is named (the table is one input:
    a line that cannot be read stops the run before any call)."""
    rows: list[dict[str, object]] = []
    text = source.read_bytes().removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = parse_record(line, f"line {number}")
        except RecordProblem as problem:
            raise InputError(f"judge table {source}: {problem.reason}") from None
        if not isinstance(value, dict):
            raise InputError(f"judge table {source}: line {number} is not a JSON object")
        rows.append({key: value.get(key) for key in ("id", "user_query", "submission")})
    return pl.DataFrame(rows, schema=dict.fromkeys(("id", "user_query", "submission"), pl.String))


def _read_table(source: Path, suffix: str) -> pl.DataFrame:
    try:
        if suffix == ".csv":
            return pl.read_csv(source.read_bytes().removeprefix(b"\xef\xbb\xbf"))
        if suffix == ".parquet":
            return pl.read_parquet(source)
        return _jsonl_table(source)
    except UnicodeDecodeError as exc:
        raise InputError(
            f"judge table {source} is not UTF-8 text ({exc}); save it as UTF-8"
        ) from None
    except (pl.exceptions.PolarsError, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(
            f"judge table {source} cannot be read ({first}); give a CSV, JSONL or Parquet "
            "table with columns id, user_query and submission"
        ) from None


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
    frame = _read_table(source, suffix)
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
