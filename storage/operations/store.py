"""The DuckDB tables of the operation scorers: case hashes, committing a run, the latest results.

Reading case files is `storage.operations.cases`.

The tables live beside the trace tables in the same database file (storage.schema). Results commit in one transaction per run,
by column name. docs/operations.md documents the tables and views.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from storage.store.duckdb_store import DuckDBStore
from storage.store.hashing import sha256_hex
from transforms.operations.model import CASE_SCHEMA

__all__ = [
    "case_hashes",
    "commit_operation_results",
    "latest_operation_results",
    "stored_case_hashes",
]


def case_hashes(cases: pl.DataFrame) -> pl.Series:
    """SHA-256 of each case's content (every CASE_SCHEMA column), for skipping unchanged cases."""
    encoded = cases.select(pl.struct(list(CASE_SCHEMA)).struct.json_encode()).to_series()
    return sha256_hex(encoded).alias("case_hash")


def stored_case_hashes(store: DuckDBStore, scorer_set: str, set_hash: str) -> pl.DataFrame:
    """case_id and case_hash of the latest results scored with this exact scorer set."""
    return store.sql(
        "SELECT case_id, case_hash FROM latest_operation_cases "
        "WHERE scorer_set = ? AND set_hash = ?",
        [scorer_set, set_hash],
    )


def commit_operation_results(
    store: DuckDBStore,
    cases: Path,
    scores: Path,
    files: pl.DataFrame,
    quarantine: Path | None = None,
) -> None:
    """Insert a run's case rows, score rows, quarantine rows (Parquet files) and file rows in
    one transaction.

    A file already recorded with the same path and content keeps its first row, and a
    quarantine row already recorded for the same file content, line and rule is not added again.
    """
    with store.transaction() as con:
        if quarantine is not None:
            con.execute(
                "INSERT INTO operation_quarantine BY NAME SELECT * FROM read_parquet(?) q "
                "WHERE NOT EXISTS (SELECT 1 FROM operation_quarantine o WHERE o.file = q.file "
                "AND o.file_hash = q.file_hash AND o.row_number IS NOT DISTINCT FROM q.row_number "
                "AND o.rule = q.rule)",
                [str(quarantine)],
            ).fetchall()
        con.execute(
            "INSERT INTO operation_cases BY NAME SELECT * FROM read_parquet(?)", [str(cases)]
        ).fetchall()
        con.execute(
            "INSERT INTO operation_scores BY NAME SELECT * FROM read_parquet(?)", [str(scores)]
        ).fetchall()
        con.register("__operation_files", files)
        try:
            con.execute(
                "INSERT INTO operation_files BY NAME SELECT * FROM __operation_files f "
                "WHERE NOT EXISTS (SELECT 1 FROM operation_files o "
                "WHERE o.path = f.path AND o.content_hash = f.content_hash)"
            ).fetchall()
        finally:
            con.unregister("__operation_files")


def latest_operation_results(
    store: DuckDBStore, scorer_set: str, case_ids: pl.Series
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The latest case rows and score rows of `scorer_set` for the given case ids."""
    wanted = pl.DataFrame({"case_id": case_ids.unique()})
    with store.transaction() as con:
        con.register("__wanted_cases", wanted)
        try:
            cases = con.sql(
                "SELECT c.* FROM latest_operation_cases c SEMI JOIN __wanted_cases USING (case_id) "
                "WHERE c.scorer_set = ? ORDER BY c.source_file, c.row_number",
                params=[scorer_set],
            ).pl()
            scores = con.sql(
                "SELECT s.* FROM latest_operation_scores s "
                "SEMI JOIN __wanted_cases USING (case_id) WHERE s.scorer_set = ?",
                params=[scorer_set],
            ).pl()
        finally:
            con.unregister("__wanted_cases")
    return cases, scores
