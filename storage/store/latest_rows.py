"""`latest_trace_rows` kept by the publications: each published trace's newest row (its
columns, its newest score and level), which the comparison reads with no join
(storage/schema/latest.py, docs/storage.md).

A scoring run's publication marks the run pending (a `meta` row); the publication of its
levels folds every pending run's traces in, in the same transaction, and so does
`fold_pending` at the end of a run whose levels published nothing. A run killed between its
two publications leaves its mark, and the next fold takes its traces too. While a mark is
left the table is not current (`is_current`) and the comparison joins the stored rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import duckdb

from storage.schema.latest import LATEST_TRACE_ROWS, PENDING, latest_rows_select

__all__ = [
    "fold_pending",
    "has_pending",
    "is_current",
    "mark_pending",
    "rebuild",
]

FOLD_PART_TRACES = 250_000
"""Most traces a fold writes in one statement: more are written in as many parts (by a hash
of the trace id) within the same transaction. 1,000,000 traces of 1.7 KB objectives in one
statement ran out of the store's 256 MB on two threads, and so did 1,000,000 ids kept by
every table read of a fold of some traces; in parts of 250,000 the objectives took 5.7 s,
against 8.8 s on one thread in parts of 500,000 (a commit's way), and a run's 1,000,000
realistic traces 4.1 s against 6.2-6.8 s (docs/performance.md)."""

_TOUCHED = "__latest_touched"
_RUNS = "__latest_runs"

_TABLES = ("trace_rows", "latest_score_rows", "confidence_trace_rows")
"""The tables whose rows of a run name the traces it changed."""


def mark_pending(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """Inside a publication: the run's published rows are not in `latest_trace_rows` yet."""
    con.execute("INSERT INTO meta VALUES (?, ?)", [PENDING, run_id])


def fold_pending(con: duckdb.DuckDBPyConnection, run_ids: list[str] | None = None) -> int:
    """Inside a publication (after the runs it publishes are marked published): replace the
    rows of `latest_trace_rows` of every trace the pending runs and `run_ids` wrote a row of
    (a trace row, a newest score, a level) by their rows as published now, and clear the
    marks. How many traces it folded."""
    marked = con.execute("SELECT value FROM meta WHERE key = ?", [PENDING]).fetchall()
    pending = [str(run) for (run,) in marked]
    runs = sorted({*pending, *(run_ids or [])})
    if not runs:
        return 0
    # The runs as a table, matched by a join: a list searched row by row took 0.2 s a table
    # of 1,000,000 rows for the 2,000 runs a migrated database of some years marks.
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {_RUNS} AS SELECT unnest($runs::VARCHAR[]) AS run_id",
        {"runs": runs},
    )
    written = " UNION ALL ".join(
        f"SELECT trace_id FROM {table} WHERE run_id IN (SELECT run_id FROM {_RUNS})"
        for table in _TABLES
    )
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {_TOUCHED} AS SELECT DISTINCT trace_id FROM ({written})"
    )
    ((touched,),) = con.execute(f"SELECT count(*) FROM {_TOUCHED}").fetchall()
    ((stored,),) = con.execute("SELECT count(*) FROM latest_score_rows").fetchall()
    if 2 * touched >= stored:
        _fold_all(con, int(stored))
    elif touched:
        _fold_some(con, int(touched))
    con.execute(f"DROP TABLE {_TOUCHED}")
    con.execute(f"DROP TABLE {_RUNS}")
    con.execute("DELETE FROM meta WHERE key = ?", [PENDING])
    return int(touched)


def _fold_all(con: duckdb.DuckDBPyConnection, stored: int) -> None:
    """Every stored trace's row again (the runs touched half of them or more: a backfill into
    an empty database, a migrated file), each table read whole: keeping a list of ids in
    every read cost more than the rows it saved."""
    con.execute(f"DELETE FROM {LATEST_TRACE_ROWS}")
    _insert_in_parts(con, stored, lambda part: part)


def _fold_some(con: duckdb.DuckDBPyConnection, touched: int) -> None:
    """The rows of the touched traces (`_TOUCHED`) again."""
    chosen = f"SELECT trace_id FROM {_TOUCHED}"
    con.execute(f"DELETE FROM {LATEST_TRACE_ROWS} WHERE trace_id IN ({chosen})")
    _insert_in_parts(con, touched, lambda part: f"trace_id IN ({chosen} WHERE {part})")


def _insert_in_parts(
    con: duckdb.DuckDBPyConnection, traces: int, condition: Callable[[str], str]
) -> None:
    """Insert the rows of `latest_rows_select(condition(part))` for each part of `traces`
    traces, `FOLD_PART_TRACES` at most a part (`part`: SQL on `trace_id`)."""
    parts = max(1, -(-traces // FOLD_PART_TRACES))
    for part in range(parts):
        split = f"hash(trace_id) % {parts} = {part}" if parts > 1 else "true"
        rows = latest_rows_select(condition(split))
        con.execute(f"INSERT INTO {LATEST_TRACE_ROWS} BY NAME {rows}")


def rebuild(con: duckdb.DuckDBPyConnection) -> int:
    """Fold every published run's traces in (a database whose rows were written otherwise
    than by publications: the benches' SQL, a test's). How many traces it folded."""
    ((runs,),) = con.execute(
        "SELECT list(run_id) FROM runs "
        "WHERE published_at IS NOT NULL OR levels_published_at IS NOT NULL"
    ).fetchall()
    return fold_pending(con, list(runs or []))


def is_current(rows: Callable[[str], list[Any]], catalog: str = "") -> bool:
    """Whether the database `catalog` (a prefix: "" for the store's own, or "name.") has
    `latest_trace_rows` (schema 8 on) showing every publication (no run pending); `rows`: a
    statement runner such as `Statements.rows`."""
    try:
        rows(f"SELECT 1 FROM {catalog}{LATEST_TRACE_ROWS} LIMIT 0")
    except duckdb.CatalogException:
        return False
    return not has_pending(rows, catalog)


def has_pending(rows: Callable[[str], list[Any]], catalog: str = "") -> bool:
    """Whether a run of the database `catalog` is left to fold (`mark_pending`)."""
    return bool(rows(f"SELECT 1 FROM {catalog}meta WHERE key = '{PENDING}' LIMIT 1"))
