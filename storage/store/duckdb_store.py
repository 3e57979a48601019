"""The store of a tracegrade database: a DuckDB file (attached while used) or a DuckLake; loads by
column name, runs written in batches and published in one transaction."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb

from storage.errors import InputError
from storage.names import sql_string
from storage.store._connection import (
    YIELD_S,
    Holds,
    attach,
    holder_of,
    locked,
    read_method,
    retried_while_busy,
    uninterrupted_method,
)
from storage.store._extensions import load_extension
from storage.store._schema_stamp import is_current, update_schema
from storage.store.commit import (
    RunHandle,
    as_of_run_views,
    discard_unpublished,
)
from storage.store.interrupts import uninterrupted
from storage.store.locations import check_file, locate
from storage.store.publishing import Publishing
from storage.store.statements import Scratch, Statements, steps_with

T = TypeVar("T")

if TYPE_CHECKING:  # imported where used: `tracegrade sql` starts without Polars and NumPy
    import numpy as np
    import numpy.typing as npt
    import polars as pl

__all__ = ["DuckDBStore", "RunHandle", "RunRecord", "holder_of"]


TRACE_ROW_GROUP_ROWS = 8192
"""Rows per Parquet row group of a DuckLake's `trace_rows` (steps and texts included)."""

MEMORY_LIMIT = "256MB"
"""DuckDB's memory limit for the store's connection. What a run holds beyond it (staging, the
commit's inserts) spills to the `.tmp` folder beside the database; what DuckDB holds outside
its buffers comes on top (docs/performance.md, end to end: 0.2 GiB in a commit batch). A run
of 10,000,000 traces, its confidence and summary included, and the report over them work
within it."""

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


class DuckDBStore(Statements, Publishing):
    """A tracegrade database: a DuckDB file, attached while this process reads or writes it,
    or a DuckLake (storage/store/locations.py)."""

    def __init__(
        self, path: str | Path, *, read_only: bool = False, data_path: str | None = None
    ) -> None:
        self.location = locate(path)
        self.path = self.location.anchor
        if self.location.catalog is None:
            check_file(self.path, read_only)
        elif not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.read_only = read_only
        new_lake = self.location.catalog is not None and not self.location.exists()
        self._data_path = data_path or (self.location.default_data_path() if new_lake else None)
        self._alias = _catalog_name(self.path)
        self._attached = False
        self._pins = 0
        self._reading = False
        self._writer_lock: int | None = None
        self.holds = Holds()
        # The connection's own database is in memory: a run's temporary tables live there,
        # so the file itself is attached only while the run reads or writes it.
        self._raw = duckdb.connect()
        try:
            self._raw.execute("SET TimeZone = 'UTC'")
            self._raw.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
            # DuckDB draws a progress bar on stderr for a statement past 2 s (a schema
            # migration of a large file took 23 s): it is no line of the command's output.
            self._raw.execute("SET enable_progress_bar = false")
            # A run reads its staged Parquet files back once a chunk: without the cache each
            # chunk parsed every staged file's footer again, so the score stage grew faster
            # than the run (29.0 s against 22.8 s for 3,000,000 traces; docs/performance.md).
            # DuckDB checks a cached footer against the file, so a rewritten file is read anew.
            self._raw.execute("SET parquet_metadata_cache = true")
            if not self._in_memory:
                spill = sql_string(f"{self.path}.tmp")
                self._raw.execute(f"SET temp_directory = {spill}")
            if self.location.catalog is not None:
                load_extension(self._raw, "ducklake")
                load_extension(self._raw, f"{self.location.catalog}_scanner")
            self._lock_writers()  # a new SQLite catalog is made by its first attach
            try:
                self._attach()
            finally:
                self._unlock_writers()
            if not read_only and not is_current(self._con):
                with self.transaction() as con:
                    update_schema(con)
                if self.location.catalog is not None:
                    # A trace row is about 2.5 KB: Parquet row groups of DuckLake's default
                    # size would be read whole into more than the memory limit.
                    with self.held():
                        self._con.execute(
                            f"CALL \"{self._alias}\".set_option('parquet_row_group_size', "
                            f"'{TRACE_ROW_GROUP_ROWS}', table_name => 'trace_rows')"
                        )
        except BaseException:
            self._raw.close()
            raise

    @property
    def db(self) -> str:
        """The database as `--db` names it, resolved: what opens this store again."""
        return self.location.target

    @property
    def _con(self) -> duckdb.DuckDBPyConnection:
        """The connection, with the database file attached (attached again if released)."""
        if not self._attached:
            self._attach()
        return self._raw

    @property
    def _lets_go(self) -> bool:
        """A DuckDB file lets go between uses; a DuckLake has no lock to let go of (its readers
        and writers each see their own snapshot), and DuckDB's in-memory database would lose
        its contents."""
        return self.location.catalog is None and not self._in_memory

    @property
    def _in_memory(self) -> bool:
        """The store is DuckDB's in-memory database: nothing to let go of, nothing to spill."""
        return str(self.path) == ":memory:"

    def _attach(self) -> None:
        # uninterrupted: a stop raised between DuckDB's ATTACH and the flag left the file
        # attached while the store thought it was not, and the next use failed
        with uninterrupted():
            attach(self._raw, self.location.target, self._alias, self.read_only, self._data_path)
            self._attached = True
            self.holds.attached()

    def release(self) -> None:
        """Let go of the file (and its lock) until the next statement that reads or writes it.

        Temporary tables stay. Nothing happens inside `held()` or a transaction. Another
        process can then open the file; the next use waits for it as opening does.
        """
        if self._attached and self._pins == 0 and self._lets_go:
            with uninterrupted():
                self._raw.execute("USE memory")
                self._raw.execute(f'DETACH "{self._alias}"')
                self._attached = False
                self.holds.released()

    @contextmanager
    def batch(self, kind: str) -> Iterator[duckdb.DuckDBPyConnection]:
        """`transaction()` for one batch of a commit (`kind`: what it writes). Before it, a
        DuckDB file is let go and left to other processes for YIELD_S when the batch would end
        the hold past HOLD_BUDGET_S, so waiting readers get their turn every few seconds."""
        if not self.holds.fits(kind):
            self.release()
            if not self._attached:
                time.sleep(YIELD_S)
        with self.held():
            started = time.monotonic()
            with self.transaction() as con:
                yield con
            self.holds.took(kind, time.monotonic() - started)

    def _read(self, call: Callable[[], T]) -> T:
        """Run a read; on a SQLite-catalog DuckLake outside `held()`, tried again while SQLite
        answers "database is locked" (`retried_while_busy`: such a read failed did nothing).
        Inside a transaction a failed statement ends it, so nothing is tried again there."""
        if self.location.catalog != "sqlite" or self._pins or self._reading:
            return call()
        self._reading = True
        try:
            return retried_while_busy(call)
        finally:
            self._reading = False

    @contextmanager
    def held(self) -> Iterator[None]:
        """Keep the file attached for the whole block, `release()` calls inside included. A
        writer of a SQLite-catalog DuckLake also holds its writer lock for the block (every
        transaction is such a block), as DuckDB holds a file's."""
        self._pins += 1
        try:
            if self._pins == 1:
                self._lock_writers()
            self._con  # noqa: B018 (attach now, before the block)
            yield
        finally:
            self._pins -= 1
            if self._pins == 0:
                self._unlock_writers()

    def _lock_writers(self) -> None:
        """Wait for the writer lock of a SQLite-catalog DuckLake (`<catalog>.writer.lock`, an
        `flock`): SQLite lets one process write its catalog at a time, and two DuckLake
        commits that overlap fail with "database is locked" (one of them cannot upgrade its
        read to a write) instead of waiting. Nothing for a DuckDB file (DuckDB locks it), a
        PostgreSQL catalog (it serializes writers itself) or a reader."""
        if self.location.catalog != "sqlite" or self.read_only or self._writer_lock is not None:
            return
        self._writer_lock = locked(Path(f"{self.path}.writer.lock"))

    def _unlock_writers(self) -> None:
        if self._writer_lock is not None:
            fd, self._writer_lock = self._writer_lock, None
            os.close(fd)  # closing the descriptor lets go of its flock

    @property
    def scratch(self) -> Statements:
        """Statements over temporary tables only: they do not attach the file, so a run's
        staging work does not hold it."""
        return Scratch(self._raw, self._read)

    def close(self) -> None:
        """Release the file (and its lock), and drop the connection object itself: a store that
        an exception's traceback keeps alive must not keep DuckDB objects alive until the
        interpreter exits (DuckDB's bindings report those as leaks)."""
        self._unlock_writers()
        if hasattr(self, "_raw"):
            self._raw.close()
            del self._raw
            self._attached = False

    def __enter__(self) -> DuckDBStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """Everything inside commits together or not at all."""
        with uninterrupted(), self.held():
            self._begin()
            try:
                yield self._con
            except BaseException:
                self._con.execute("ROLLBACK")
                raise
            self._con.execute("COMMIT")

    def _begin(self) -> None:
        """BEGIN. On a SQLite-catalog DuckLake the transaction reads its snapshot from the
        catalog at once, tried again while SQLite answers "database is locked" (the
        transaction then starts over: nothing is written yet), as the reads outside a
        transaction are; its later reads hold SQLite's shared lock until it ends."""
        if self.location.catalog != "sqlite":
            self._con.execute("BEGIN TRANSACTION")
            return
        snapshot = f"FROM ducklake_current_snapshot({sql_string(self._alias)})"

        def begun() -> None:
            self._con.execute("BEGIN TRANSACTION")
            try:
                self._con.execute(snapshot).fetchall()
            except duckdb.Error:
                self._con.execute("ROLLBACK")
                raise

        retried_while_busy(begun)

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
        had not published is discarded."""
        rows = self._con.execute("SELECT run_id FROM runs WHERE status = 'running'").fetchall()
        gone = [run_id for (run_id,) in rows if not alive(run_id)]
        if gone:
            with self.transaction() as con:
                discard_unpublished(con, gone)
                con.execute(
                    "UPDATE runs SET status = 'interrupted', finished_at = ? "
                    "WHERE status = 'running' AND list_contains(?, run_id)",
                    [datetime.now(UTC), gone],
                )
        return gone

    @uninterrupted_method
    def finish_run(self, run: RunHandle, record: RunRecord) -> None:
        """Close the run's log entry with its status, counts, timings and summary; a run that
        did not complete loses the rows it never published."""
        with self.transaction() as con:
            if record.status != "completed":
                discard_unpublished(con, [run.run_id])
            self._record_finish(run, record)

    def _record_finish(self, run: RunHandle, record: RunRecord) -> None:
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

    @read_method
    def stored_traces(self) -> pl.DataFrame:
        """Identity and replay columns of every stored trace."""
        return self.sql(
            "SELECT trace_id, content_hash, created_at, agent_id, task_domain, success, "
            "source_file, text_sha FROM traces"
        )

    @read_method
    def trace_count(self) -> int:
        """How many traces the database stores (published runs')."""
        return int(self.rows("SELECT count(*) FROM traces")[0][0])

    @read_method
    def has_table(self, name: str) -> bool:
        """True when the database has a table or view `name` (a read-only store may lack one)."""
        rows = self._con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]
        ).fetchall()
        return bool(rows[0][0])

    @read_method
    def columns(self, table: str) -> list[str]:
        """Column names of a table, in order."""
        rows = self._con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
            "ORDER BY ordinal_position",
            [table],
        ).fetchall()
        return [name for (name,) in rows]

    @read_method
    def traces_for(
        self,
        trace_ids: pl.Series,
        columns: Sequence[str],
        *,
        step_fields: Sequence[str] | None = None,
    ) -> pl.DataFrame:
        """Stored trace rows for the given ids (in no particular order). With `step_fields`,
        `steps` holds only those fields of each step."""
        import polars as pl

        ids = pl.DataFrame({"trace_id": trace_ids})
        selected = ", ".join(
            steps_with(step_fields) if step_fields is not None and name == "steps" else f"t.{name}"
            for name in columns
        )
        return self.sql_with(
            f"SELECT {selected} FROM traces t SEMI JOIN __ids USING (trace_id)", ids=ids
        )

    def show_as_of_run(self, run_seq: int) -> None:
        """Make `scores` and `latest_scores` of this connection show the scores as they were
        when run `run_seq` (the `runs` table's number) had published, by temporary views of
        the same names; `traces` and the other tables stay as they are now.

        Raises:
            InputError: no published run has that number.
        """
        published = [
            seq
            for (seq,) in self.rows(
                "SELECT run_seq FROM runs WHERE published_at IS NOT NULL ORDER BY run_seq"
            )
        ]
        if run_seq not in published:
            known = ", ".join(str(seq) for seq in published[-10:]) or "none"
            raise InputError(
                f"--as-of-run {run_seq}: no published run has that number (the last published: "
                f"{known}; runs.run_seq)"
            )
        as_of_run_views(self._con, self._alias, run_seq)

    def commits(self) -> int:
        """How many scoring commits the file has had (a stale plan's check)."""
        rows = self._con.execute("SELECT value FROM meta WHERE key = 'commits'").fetchall()
        return int(rows[0][0]) if rows else 0

    # The embeddings table: a pure cache of vectors by text, committed as soon as written.

    @read_method
    def missing_embeddings(self, keys: pl.Series) -> pl.Series:
        """The distinct keys among `keys` that have no stored vector."""
        import polars as pl

        wanted = pl.DataFrame({"embedding_key": keys.unique(maintain_order=True)})
        found = self.sql_with(
            "SELECT w.embedding_key FROM __wanted w WHERE NOT EXISTS "
            "(SELECT 1 FROM embeddings e WHERE e.embedding_key = w.embedding_key)",
            wanted=wanted,
        )
        return found["embedding_key"]

    @read_method
    def embedding_models(self) -> list[str]:
        """The model keys (model|mode|length) that stored vectors were made under."""
        rows = self._con.sql("SELECT DISTINCT model FROM embeddings ORDER BY model").fetchall()
        return [row[0] for row in rows]

    @uninterrupted_method
    def put_embeddings(
        self, keys: Sequence[str], vectors: npt.NDArray[np.float32], *, model: str, run_id: str
    ) -> None:
        """Store vectors under their keys; committed at once, since they are a pure cache."""
        import numpy as np
        import polars as pl

        frame = pl.DataFrame(
            {
                "embedding_key": list(keys),
                "model": model,
                "dimensions": vectors.shape[1],
                "vector": vectors.astype(np.float32),
                "run_id": run_id,
            }
        ).with_columns(
            pl.col("vector").cast(pl.List(pl.Float32)), pl.col("dimensions").cast(pl.Int32)
        )
        with self.transaction() as con:
            con.register("__vectors", frame)
            try:
                con.execute(
                    "INSERT INTO embeddings BY NAME SELECT * FROM __vectors v WHERE NOT EXISTS "
                    "(SELECT 1 FROM embeddings e WHERE e.embedding_key = v.embedding_key)"
                )
            finally:
                con.unregister("__vectors")

    @read_method
    def vectors(self, keys: pl.Series) -> npt.NDArray[np.float32]:
        """Stored vectors in the order of `keys` (each key must be stored)."""
        import numpy as np
        import polars as pl

        order = pl.DataFrame({"embedding_key": keys, "position": np.arange(len(keys))})
        with self._registered({"order": order}):
            table = self._con.sql(
                "SELECT o.position, e.vector FROM __order o JOIN embeddings e USING (embedding_key) "
                "ORDER BY o.position"
            ).to_arrow_table()
        if table.num_rows != len(keys):
            raise LookupError(f"{len(keys) - table.num_rows} embeddings are missing from the store")
        column = table.column("vector").combine_chunks()
        flat = column.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        return flat.reshape(len(keys), -1) if len(keys) else flat.reshape(0, 0)
