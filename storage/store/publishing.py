"""How a run's results reach the database: written in batches (by this process, or by Dask
workers into a DuckLake, each its own shard) and published in one last transaction
(storage/store/commit.py holds the statements)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import duckdb

from storage.errors import StalePlanError
from storage.store.commit import (
    COMMIT_BATCH_ROWS,
    LAKE_BATCH_ROWS,
    SCORE_TABLES,
    RunHandle,
    discard_unpublished,
    has_rows,
    hashed_on_ids,
    merge,
    one_writer_thread,
    parquet_rows,
    parquet_slices,
    publish,
    score_batches,
    score_shards,
    sql_string,
    trace_batches,
    trace_shards,
)
from storage.store.latest_rows import fold_pending
from storage.store.locations import Location

__all__ = ["Publishing", "Shard"]

Shard = tuple[str, str, int]
"""One shard of a run's rows for a worker: the table (`trace_rows` or `score_rows`), a Parquet
file of its rows, and the run's sequence number (the score rows take it)."""


class Publishing:
    """The commit methods of DuckDBStore (storage.store.duckdb_store)."""

    _raw: duckdb.DuckDBPyConnection
    _alias: str
    location: Location

    def transaction(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        raise NotImplementedError  # DuckDBStore.transaction

    def batch(self, kind: str) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        raise NotImplementedError  # DuckDBStore.batch

    def commits(self) -> int:
        raise NotImplementedError  # DuckDBStore.commits

    def commit_run(
        self,
        run: RunHandle,
        tables: dict[str, Path],
        *,
        traces: tuple[str, Path] | None = None,
        planned_at: int | None = None,
        batch_rows: int | None = None,
    ) -> None:
        """Write a run's results in batches of `batch_rows` rows (`batch_rows()` when None),
        one transaction each with the file let go in between, and publish them
        (`publish_run`); readers see all of the run or none of it.

        `tables` maps `scores`, `quarantine` and `files` to Parquet files; `traces` names the
        run's staging table and a Parquet file of the trace ids to store from it. Traces
        replace stored rows with the same id; quarantine and file rows already recorded for
        the same file content are kept as they are, so a re-run adds nothing.
        """
        scores, rows = tables.get("scores"), self.batch_rows(batch_rows)
        batches = [
            ("score_rows", statement)
            for statement in (score_batches(self._raw, scores, run.run_seq, rows) if scores else [])
        ]
        if traces is not None:
            batches += [
                ("trace_rows", statement)
                for statement in trace_batches(self._raw, *traces, run.run_id, rows)
            ]
        with hashed_on_ids(self._raw), one_writer_thread(self._raw):
            for table, statement in batches:
                with self.batch(table) as con:
                    if self._stale(planned_at):
                        break
                    con.execute(statement)
        self.publish_run(run, tables, traces=traces, planned_at=planned_at)

    def batch_rows(self, rows: int | None = None) -> int:
        """`rows`, or the rows this store commits per transaction by default: COMMIT_BATCH_ROWS
        on a DuckDB file (short holds of its lock), LAKE_BATCH_ROWS on a DuckLake."""
        if rows is not None:
            return rows
        return COMMIT_BATCH_ROWS if self.location.catalog is None else LAKE_BATCH_ROWS

    def row_batches(
        self, parts: list[Path], rows: int | None = None
    ) -> Iterator[list[tuple[Path, int, int]]]:
        """The rows of the Parquet files `parts` in batches of `batch_rows(rows)`, as (file,
        first row, end row) slices (storage.store.commit.parquet_slices)."""
        counted = [(part, parquet_rows(self._raw, part)) for part in parts]
        return parquet_slices(counted, self.batch_rows(rows))

    def one_writer_thread(self) -> AbstractContextManager[None]:
        """DuckDB on one thread for the block, so batches of whole row groups reach the file
        as such (storage.store.commit.one_writer_thread)."""
        return one_writer_thread(self._raw)

    def shards(
        self,
        run: RunHandle,
        tables: dict[str, Path],
        folder: Path,
        *,
        traces: tuple[str, Path] | None = None,
        batch_rows: int | None = None,
    ) -> list[Shard]:
        """The run's rows as shards of `batch_rows` rows (COMMIT_BATCH_ROWS when None: each
        worker's shard stays small whatever the input) for workers to write (`write_shard`):
        the scores file's row ranges, and the staged traces copied to Parquet files in
        `folder` (from the staging table alone: the database is not touched)."""
        scores, batch_rows = tables.get("scores"), batch_rows or COMMIT_BATCH_ROWS
        shards: list[Shard] = []
        if scores is not None:
            for part in score_shards(self._raw, scores, folder, batch_rows):
                shards.append(("score_rows", str(part), run.run_seq))
        if traces is not None:
            with hashed_on_ids(self._raw):
                for part in trace_shards(self._raw, *traces, run.run_id, folder, batch_rows):
                    shards.append(("trace_rows", str(part), run.run_seq))
        return shards

    def write_shard(self, shard: Shard) -> None:
        """Add one shard's rows to its table, unpublished, in one transaction (a worker's
        commit; the DuckLake snapshot names the process)."""
        table, path, run_seq = shard
        replace = " REPLACE (?::BIGINT AS run_seq)" if table == "score_rows" else ""
        with self.transaction() as con:
            if self.location.catalog is not None:
                con.execute(
                    f"CALL \"{self._alias}\".set_commit_message('tracegrade', ?)",
                    [f"shard {Path(path).name} written by pid {os.getpid()}"],
                )
            for written in SCORE_TABLES if table == "score_rows" else (table,):
                con.execute(
                    f"INSERT INTO {written} BY NAME SELECT *{replace} "
                    f"FROM read_parquet({sql_string(path)})",
                    [run_seq] if replace else None,
                )

    def publish_run(
        self,
        run: RunHandle,
        tables: dict[str, Path],
        *,
        traces: tuple[str, Path] | None = None,
        planned_at: int | None = None,
    ) -> None:
        """Publish the run's written rows with its quarantine and file rows, in one transaction.

        With `planned_at` (the `commits()` the run planned against), it first checks that no
        other run has published traces since; if one has, the run's rows are discarded and
        StalePlanError raised. The run's sequence number becomes the newest when another run
        with a later one has published scores first, so `latest_scores` follows the order of
        the publications.
        """
        scores = tables.get("scores")
        wrote = has_rows(self._raw, scores) or has_rows(self._raw, traces and traces[1])
        with self.batch("publish") as con:
            stale = self._stale(planned_at)
            if stale:
                discard_unpublished(con, [run.run_id])
            else:
                if wrote:
                    count = self.commits() + 1
                    con.execute("DELETE FROM meta WHERE key = 'commits'")
                    con.execute("INSERT INTO meta VALUES ('commits', ?)", [str(count)])
                publish(con, run, wrote=wrote)
                merge(con, {name: path for name, path in tables.items() if name != "scores"})
        if stale:
            raise StalePlanError(f"run {run.run_id}: traces were stored since it planned")

    def fold_latest_rows(self) -> int:
        """Fold the runs still pending into `latest_trace_rows` in one transaction (the end of
        a scoring run whose levels published nothing, or that computes none); how many traces
        (storage/store/latest_rows.py)."""
        with self.batch("latest rows") as con:
            return fold_pending(con)

    def _stale(self, planned_at: int | None) -> bool:
        return planned_at is not None and self.commits() != planned_at
