"""The DuckDB store: one file, one writer, every load by column name and in one transaction."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from storage._connection import connect, holder_of, uninterrupted_method
from storage._embedding_cache import EmbeddingCache
from storage.errors import StoreOpenError
from storage.interrupts import uninterrupted
from storage.schema import MIGRATIONS, SCHEMA_SQL, SCHEMA_VERSION

__all__ = ["DuckDBStore", "RunHandle", "RunRecord", "holder_of"]

_SCHEMA_SHA = hashlib.sha256(SCHEMA_SQL.encode()).hexdigest()
"""Which SCHEMA_SQL a file was last given (`meta` key schema_sql)."""


@dataclass(frozen=True)
class RunHandle:
    """The identity of a run in progress."""

    run_id: str
    run_seq: int


@dataclass
class RunRecord:
    """What a finished run writes to the runs log."""

    status: str
    counts: dict[str, int]
    timings: dict[str, float]
    summary: str
    error: str | None = None


class DuckDBStore(EmbeddingCache):
    """A tracegrade database file, opened for writing by this process alone."""

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise StoreOpenError(
                f"database {self.path} is a folder; give the path of a DuckDB file, "
                f"for example {self.path / 'scores.duckdb'}"
            )
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # A run killed while DuckDB created the file can leave it empty: nothing was ever
            # committed to it, and DuckDB refuses to open it, so it is started afresh.
            if self.path.exists() and self.path.stat().st_size == 0:
                self.path.unlink()
        self._con = connect(self.path, read_only)
        try:
            self._con.execute("SET TimeZone = 'UTC'")
            self._con.execute("SET memory_limit = '512MB'")
            if not read_only and not self._schema_current():
                self._con.execute(SCHEMA_SQL)
                self._stamp_schema()
        except BaseException:
            self._con.close()
            raise

    def close(self) -> None:
        """Release the file (and its lock), and drop the connection object itself: a store that
        an exception's traceback keeps alive must not keep DuckDB objects alive until the
        interpreter exits (DuckDB's bindings report those as leaks)."""
        if hasattr(self, "_con"):
            self._con.close()
            del self._con

    def __enter__(self) -> DuckDBStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _schema_current(self) -> bool:
        """True when the file was last stamped by this SCHEMA_VERSION and this SCHEMA_SQL: its
        DDL then changes nothing, and running it anyway rewrites the views, a catalog change
        that DuckDB checkpoints on close (about 0.4 to 1 s on a database of 1,000,000 traces,
        paid by every command that opens the file for writing)."""
        try:
            found = dict(
                self._con.execute(
                    "SELECT key, value FROM meta WHERE key IN ('schema_version', 'schema_sql')"
                ).fetchall()
            )
        except duckdb.CatalogException:  # a new file: no meta table yet
            return False
        return found == {"schema_version": str(SCHEMA_VERSION), "schema_sql": _SCHEMA_SHA}

    def _stamp_schema(self) -> None:
        """Stamp a new file with SCHEMA_VERSION; bring an older file up to it (MIGRATIONS);
        record which SCHEMA_SQL it now has."""
        found = self._con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
        version = int(found[0][0]) if found else SCHEMA_VERSION
        with self.transaction() as con:
            for step in range(version + 1, SCHEMA_VERSION + 1):
                con.execute(MIGRATIONS[step])
            if version < SCHEMA_VERSION:
                con.execute(SCHEMA_SQL)
            con.execute("DELETE FROM meta WHERE key IN ('schema_version', 'schema_sql')")
            con.execute(
                "INSERT INTO meta VALUES ('schema_version', ?), ('schema_sql', ?)",
                [str(max(version, SCHEMA_VERSION)), _SCHEMA_SHA],
            )

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """Everything inside commits together or not at all."""
        with uninterrupted():
            self._con.execute("BEGIN TRANSACTION")
            try:
                yield self._con
            except BaseException:
                self._con.execute("ROLLBACK")
                raise
            self._con.execute("COMMIT")

    @uninterrupted_method
    def sql(self, query: str, params: Sequence[Any] | None = None) -> pl.DataFrame:
        """Run a read query and return its rows."""
        return self._con.sql(query, params=params).pl()

    @uninterrupted_method
    def execute(self, statement: str, params: Sequence[Any] | None = None) -> None:
        """Run one statement that returns nothing the caller needs."""
        self._con.execute(statement, params).fetchall()

    @uninterrupted_method
    def sql_with(self, query: str, **frames: pl.DataFrame) -> pl.DataFrame:
        """Run a read query that refers to each of `frames` as `__<name>`."""
        with self._registered(frames):
            return self._con.sql(query).pl()

    @uninterrupted_method
    def execute_with(self, statement: str, **frames: pl.DataFrame) -> None:
        """Run a statement that refers to each of `frames` as `__<name>`."""
        with self._registered(frames):
            self._con.execute(statement).fetchall()

    @contextmanager
    def _registered(self, frames: dict[str, pl.DataFrame]) -> Iterator[None]:
        for name, frame in frames.items():
            self._con.register(f"__{name}", frame)
        try:
            yield
        finally:
            for name in frames:
                self._con.unregister(f"__{name}")

    @uninterrupted_method
    def create_temp_table(self, name: str, empty: pl.DataFrame) -> None:
        """A temporary table `name` (gone when the connection closes) with `empty`'s columns."""
        with self._registered({"empty": empty}):
            self._con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT * FROM __empty")

    @uninterrupted_method
    def append(self, table: str, rows: pl.DataFrame) -> None:
        """Insert `rows` into `table` by column name, through Arrow."""
        with self._registered({"append": rows}):
            self._con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM __append")

    @uninterrupted_method
    def drop_temp(self, name: str) -> None:
        """Drop the temporary table or view `name`, if there is one."""
        kinds = self._con.execute(
            "SELECT 'TABLE' FROM duckdb_tables() WHERE temporary AND table_name = ? "
            "UNION ALL SELECT 'VIEW' FROM duckdb_views() WHERE temporary AND view_name = ?",
            [name, name],
        ).fetchall()
        for (kind,) in kinds:
            self._con.execute(f"DROP {kind} {name}")

    @uninterrupted_method
    def begin_run(
        self,
        flow: str,
        *,
        version: str,
        model: str | None,
        config: dict[str, Any],
        config_hash: str,
    ) -> RunHandle:
        """Record a run as started and give it the next sequence number."""
        run_id = uuid.uuid4().hex
        with self.transaction() as con:
            ((seq,),) = con.execute("SELECT coalesce(max(run_seq), 0) + 1 FROM runs").fetchall()
            con.execute(
                "INSERT INTO runs BY NAME SELECT ? AS run_id, ? AS run_seq, ? AS flow, "
                "'running' AS status, ? AS started_at, ? AS tracegrade_version, "
                "? AS embedding_model, ? AS config_hash, ? AS config_json",
                [
                    run_id,
                    seq,
                    flow,
                    datetime.now(UTC),
                    version,
                    model,
                    config_hash,
                    json.dumps(config, sort_keys=True),
                ],
            )
        return RunHandle(run_id=run_id, run_seq=int(seq))

    @uninterrupted_method
    def close_interrupted_runs(self) -> list[str]:
        """Mark runs still `running` as `interrupted` and return their ids.

        Only the process holding the write lock runs this, so no such run is alive: it was
        killed before it finished, and its transaction never committed.
        """
        rows = self._con.execute("SELECT run_id FROM runs WHERE status = 'running'").fetchall()
        self._con.execute(
            "UPDATE runs SET status = 'interrupted', finished_at = ? WHERE status = 'running'",
            [datetime.now(UTC)],
        )
        return [run_id for (run_id,) in rows]

    @uninterrupted_method
    def finish_run(self, run: RunHandle, record: RunRecord) -> None:
        """Close the run's log entry with its status, counts, timings and summary."""
        assignments = ", ".join(f"{name} = ?" for name in record.counts)
        values = list(record.counts.values())
        self._con.execute(
            f"UPDATE runs SET status = ?, finished_at = ?, timings = ?, summary = ?, error = ?"
            f"{', ' + assignments if assignments else ''} WHERE run_id = ?",
            [
                record.status,
                datetime.now(UTC),
                json.dumps(record.timings),
                record.summary,
                record.error,
                *values,
                run.run_id,
            ],
        )

    @uninterrupted_method
    def stored_traces(self) -> pl.DataFrame:
        """Identity and replay columns of every stored trace."""
        return self.sql(
            "SELECT trace_id, content_hash, created_at, agent_id, task_domain, success, "
            "source_file, text_sha FROM traces"
        )

    @uninterrupted_method
    def has_table(self, name: str) -> bool:
        """True when the database has a table `name` (a read-only store may lack one)."""
        rows = self._con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [name]
        ).fetchall()
        return bool(rows[0][0])

    @uninterrupted_method
    def columns(self, table: str) -> list[str]:
        """Column names of a table, in order."""
        rows = self._con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
            "ORDER BY ordinal_position",
            [table],
        ).fetchall()
        return [name for (name,) in rows]

    @uninterrupted_method
    def traces_for(
        self, trace_ids: pl.Series, columns: Sequence[str], *, light_steps: bool = False
    ) -> pl.DataFrame:
        """Stored trace rows for the given ids (in no particular order). With `light_steps`,
        `steps` holds only each step's type, tool_present and tool_name."""
        ids = pl.DataFrame({"trace_id": trace_ids})
        self._con.register("__ids", ids)
        try:
            selected = ", ".join(
                "list_transform(t.steps, lambda s: {'type': s.type, 'tool_present': "
                "s.tool_present, 'tool_name': s.tool_name}) AS steps"
                if light_steps and name == "steps"
                else f"t.{name}"
                for name in columns
            )
            return self._con.sql(
                f"SELECT {selected} FROM traces t SEMI JOIN __ids USING (trace_id)"
            ).pl()
        finally:
            self._con.unregister("__ids")

    @uninterrupted_method
    def commit_run(
        self,
        run: RunHandle,
        tables: dict[str, Path],
        *,
        traces: tuple[str, Path] | None = None,
    ) -> None:
        """Write a run's results in one transaction.

        `tables` maps `scores`, `quarantine` and `files` to Parquet files; `traces` names the
        run's staging table and a Parquet file of the trace ids to store from it. Traces
        replace stored rows with the same id; quarantine and file rows already recorded for
        the same file content are kept as they are, so a re-run adds nothing. On any error the
        transaction rolls back, its temporary views with it.
        """
        with self.transaction() as con:
            if traces is not None:
                self._store_traces(con, run, *traces)
            for name, source in tables.items():
                quoted = str(source).replace("'", "''")
                con.execute(
                    f"CREATE OR REPLACE TEMP VIEW __new_{name} AS "
                    f"SELECT * FROM read_parquet('{quoted}')"
                )
            self._merge(con, tables)
            for name in tables:
                con.execute(f"DROP VIEW __new_{name}")

    @staticmethod
    def _store_traces(
        con: duckdb.DuckDBPyConnection, run: RunHandle, staged: str, ids: Path
    ) -> None:
        """Copy the staged rows of the ids in `ids` into `traces`, replacing stored ones."""
        quoted = str(ids).replace("'", "''")
        con.execute(
            f"CREATE OR REPLACE TEMP VIEW __fresh AS SELECT * FROM read_parquet('{quoted}')"
        )
        con.execute("DELETE FROM traces WHERE trace_id IN (SELECT trace_id FROM __fresh)")
        con.execute(
            f"INSERT INTO traces BY NAME SELECT * EXCLUDE (_order), ? AS run_id FROM {staged} "
            "SEMI JOIN __fresh USING (trace_id)",
            [run.run_id],
        )
        con.execute("DROP VIEW __fresh")

    @staticmethod
    def _merge(con: duckdb.DuckDBPyConnection, tables: dict[str, Path]) -> None:
        if "scores" in tables:
            con.execute("INSERT INTO scores BY NAME SELECT * FROM __new_scores")
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
