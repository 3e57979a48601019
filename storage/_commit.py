"""The statements of a run's commit (DuckDBStore.commit_run), inside its transaction."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

__all__ = ["RunHandle", "has_rows", "merge", "newest_seq", "store_traces"]


@dataclass(frozen=True)
class RunHandle:
    """The identity of a run in progress."""

    run_id: str
    run_seq: int


def has_rows(con: duckdb.DuckDBPyConnection, parquet: Path | None) -> bool:
    """True when the Parquet file `parquet` is given and holds a row."""
    if parquet is None:
        return False
    quoted = str(parquet).replace("'", "''")
    return bool(con.execute(f"SELECT count(*) FROM read_parquet('{quoted}')").fetchall()[0][0])


def newest_seq(con: duckdb.DuckDBPyConnection, run: RunHandle) -> RunHandle:
    """`run`, renumbered after every other run when one with a later number has committed
    scores already (it started after this run, and finished first)."""
    ((newest,),) = con.execute("SELECT coalesce(max(run_seq), 0) FROM scores").fetchall()
    if newest <= run.run_seq:
        return run
    ((seq,),) = con.execute("SELECT max(run_seq) + 1 FROM runs").fetchall()
    con.execute("UPDATE runs SET run_seq = ? WHERE run_id = ?", [seq, run.run_id])
    return RunHandle(run.run_id, int(seq))


def store_traces(con: duckdb.DuckDBPyConnection, run: RunHandle, staged: str, ids: Path) -> None:
    """Copy the staged rows of the ids in `ids` into `traces`, replacing stored ones."""
    quoted = str(ids).replace("'", "''")
    con.execute(f"CREATE OR REPLACE TEMP VIEW __fresh AS SELECT * FROM read_parquet('{quoted}')")
    con.execute("DELETE FROM traces WHERE trace_id IN (SELECT trace_id FROM __fresh)")
    con.execute(
        f"INSERT INTO traces BY NAME SELECT * EXCLUDE (_order), ? AS run_id FROM {staged} "
        "SEMI JOIN __fresh USING (trace_id)",
        [run.run_id],
    )
    con.execute("DROP VIEW __fresh")


def merge(con: duckdb.DuckDBPyConnection, tables: dict[str, Path], run: RunHandle) -> None:
    """Add the run's scores, and the quarantine and file rows not recorded yet (the views
    `__new_<name>` over the files of `tables`)."""
    if "scores" in tables:
        con.execute(
            "INSERT INTO scores BY NAME SELECT * REPLACE (?::BIGINT AS run_seq) FROM __new_scores",
            [run.run_seq],
        )
    if "quarantine" in tables:
        con.execute(
            "INSERT INTO quarantine BY NAME SELECT * FROM __new_quarantine q WHERE NOT EXISTS ("
            "SELECT 1 FROM quarantine o WHERE o.file = q.file AND o.file_hash = q.file_hash "
            "AND o.row_number IS NOT DISTINCT FROM q.row_number AND o.rule = q.rule)"
        )
    if "files" in tables:
        # A file backfilled in part earlier and now read whole gets its new status.
        con.execute(
            "DELETE FROM files o USING __new_files f WHERE o.path = f.path "
            "AND o.content_hash = f.content_hash AND (o.status <> f.status "
            "OR o.rows_scored <> f.rows_scored OR o.rows_out_of_range <> f.rows_out_of_range)"
        )
        con.execute(
            "INSERT INTO files BY NAME SELECT * FROM __new_files f WHERE NOT EXISTS ("
            "SELECT 1 FROM files o WHERE o.path = f.path AND o.content_hash = f.content_hash)"
        )
