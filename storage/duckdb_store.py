"""The DuckDB store: one file, one writer, every load by column name and in one transaction."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from storage._commit import RunHandle, has_rows, merge, newest_seq, store_traces
from storage._connection import attach, holder_of, uninterrupted_method
from storage._embedding_cache import EmbeddingCache
from storage._statements import Scratch, Statements
from storage.errors import StalePlanError, StoreOpenError
from storage.interrupts import uninterrupted
from storage.schema import MIGRATIONS, SCHEMA_SQL, SCHEMA_VERSION

__all__ = ["DuckDBStore", "RunHandle", "RunRecord", "holder_of"]

_SCHEMA_SHA = hashlib.sha256(SCHEMA_SQL.encode()).hexdigest()
"""Which SCHEMA_SQL a file was last given (`meta` key schema_sql)."""


_RESERVED_CATALOGS = frozenset({"memory", "temp", "system", "main"})


def _catalog_name(path: Path) -> str:
    """The name the file is attached under: its stem, as DuckDB names a file it opens."""
    stem = path.stem.replace('"', "")
    usable = stem and stem != ":memory:" and stem.lower() not in _RESERVED_CATALOGS
    return stem if usable else "tracegrade_db"


@dataclass
class RunRecord:
    """What a finished run writes to the runs log."""

    status: str
    counts: dict[str, int]
    timings: dict[str, float]
    summary: str
    error: str | None = None


class DuckDBStore(Statements, EmbeddingCache):
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
        self.read_only = read_only
        self._alias = _catalog_name(self.path)
        self._attached = False
        self._pins = 0
        self._held_since = 0.0
        self.holds: list[float] = []
        # The connection's own database is in memory: a run's temporary tables live there,
        # so the file itself is attached only while the run reads or writes it.
        self._raw = duckdb.connect()
        try:
            self._raw.execute("SET TimeZone = 'UTC'")
            self._raw.execute("SET memory_limit = '512MB'")
            if not self._in_memory:
                spill = str(self.path).replace("'", "''") + ".tmp"
                self._raw.execute(f"SET temp_directory = '{spill}'")
            self._attach()
            if not read_only and not self._schema_current():
                self._raw.execute(SCHEMA_SQL)
                self._stamp_schema()
        except BaseException:
            self._raw.close()
            raise

    @property
    def _con(self) -> duckdb.DuckDBPyConnection:
        """The connection, with the database file attached (attached again if released)."""
        if not self._attached:
            self._attach()
        return self._raw

    @property
    def _in_memory(self) -> bool:
        """The store is DuckDB's in-memory database: nothing to let go of, nothing to spill."""
        return str(self.path) == ":memory:"

    def _attach(self) -> None:
        attach(self._raw, self.path, self._alias, self.read_only)
        self._attached = True
        self._held_since = time.monotonic()

    def release(self) -> None:
        """Let go of the file (and its lock) until the next statement that reads or writes it.

        Temporary tables stay. Nothing happens inside `held()` or a transaction. Another
        process can then open the file; the next use waits for it as opening does.
        """
        if self._attached and self._pins == 0 and not self._in_memory:
            with uninterrupted():
                self._raw.execute("USE memory")
                self._raw.execute(f'DETACH "{self._alias}"')
                self._attached = False
                self.holds.append(time.monotonic() - self._held_since)

    def held_so_far(self) -> list[float]:
        """The seconds of each time this store has held the file, the current one included."""
        ongoing = [time.monotonic() - self._held_since] if self._attached else []
        return self.holds + ongoing

    @contextmanager
    def held(self) -> Iterator[None]:
        """Keep the file attached for the whole block, `release()` calls inside included."""
        self._pins += 1
        try:
            self._con  # noqa: B018 (attach now, before the block)
            yield
        finally:
            self._pins -= 1

    @property
    def scratch(self) -> Statements:
        """Statements over temporary tables only: they do not attach the file, so a run's
        staging work does not hold it."""
        return Scratch(self._raw)

    def close(self) -> None:
        """Release the file (and its lock), and drop the connection object itself: a store that
        an exception's traceback keeps alive must not keep DuckDB objects alive until the
        interpreter exits (DuckDB's bindings report those as leaks)."""
        if hasattr(self, "_raw"):
            self._raw.close()
            del self._raw
            self._attached = False

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
        with uninterrupted(), self.held():
            self._con.execute("BEGIN TRANSACTION")
            try:
                yield self._con
            except BaseException:
                self._con.execute("ROLLBACK")
                raise
            self._con.execute("COMMIT")

    @uninterrupted_method
    def begin_run(
        self,
        flow: str,
        *,
        version: str,
        model: str | None,
        config: dict[str, Any],
        config_hash: str,
        run_id: str | None = None,
    ) -> RunHandle:
        """Record a run as started (a new id unless `run_id` is given) and give it the next
        sequence number."""
        run_id = run_id or uuid.uuid4().hex
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
    def close_interrupted_runs(self, alive: Callable[[str], bool]) -> list[str]:
        """Mark the runs still `running` whose process is gone (`alive(run_id)` is False) as
        `interrupted` and return their ids: each was killed before it finished, and what it
        had not committed never reached the file."""
        rows = self._con.execute("SELECT run_id FROM runs WHERE status = 'running'").fetchall()
        gone = [run_id for (run_id,) in rows if not alive(run_id)]
        if gone:
            self._con.execute(
                "UPDATE runs SET status = 'interrupted', finished_at = ? "
                "WHERE status = 'running' AND list_contains(?, run_id)",
                [datetime.now(UTC), gone],
            )
        return gone

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
        planned_at: int | None = None,
    ) -> None:
        """Write a run's results in one transaction.

        With `planned_at` (the `commits()` the run planned against), it first checks that no
        other run has stored traces since, else raises StalePlanError and writes nothing. The
        run's sequence number becomes the newest when another run with a later one has
        already committed scores, so `latest_scores` follows the order of the commits.

        `tables` maps `scores`, `quarantine` and `files` to Parquet files; `traces` names the
        run's staging table and a Parquet file of the trace ids to store from it. Traces
        replace stored rows with the same id; quarantine and file rows already recorded for
        the same file content are kept as they are, so a re-run adds nothing. On any error the
        transaction rolls back, its temporary views with it.
        """
        with self.transaction() as con:
            if planned_at is not None and self.commits() != planned_at:
                raise StalePlanError(f"run {run.run_id}: traces were stored since it planned")
            if has_rows(con, tables.get("scores")) or has_rows(con, traces and traces[1]):
                run = newest_seq(con, run)
                count = self.commits() + 1
                con.execute("DELETE FROM meta WHERE key = 'commits'")
                con.execute("INSERT INTO meta VALUES ('commits', ?)", [str(count)])
            if traces is not None:
                store_traces(con, run, *traces)
            for name, source in tables.items():
                quoted = str(source).replace("'", "''")
                con.execute(
                    f"CREATE OR REPLACE TEMP VIEW __new_{name} AS "
                    f"SELECT * FROM read_parquet('{quoted}')"
                )
            merge(con, tables, run)
            for name in tables:
                con.execute(f"DROP VIEW __new_{name}")

    def commits(self) -> int:
        """How many scoring commits the file has had (a stale plan's check)."""
        rows = self._con.execute("SELECT value FROM meta WHERE key = 'commits'").fetchall()
        return int(rows[0][0]) if rows else 0
