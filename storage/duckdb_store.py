"""The DuckDB store: one file, one writer, every load by column name and in one transaction."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import numpy.typing as npt
import polars as pl

from storage.errors import StoreLockedError, StoreOpenError
from storage.schema import MIGRATIONS, SCHEMA_SQL, SCHEMA_VERSION

__all__ = ["DuckDBStore", "RunHandle", "RunRecord", "holder_of"]

_LOCK_PID = re.compile(r"\(PID (\d+)\)")


def holder_of(message: str) -> str:
    """Describe the process named in a DuckDB lock error: its PID and, when readable, command."""
    match = _LOCK_PID.search(message)
    if match is None:
        return "another process"
    pid = match.group(1)
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        command = ""
    return f"PID {pid} ({command})" if command else f"PID {pid}"


def _connect(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """A connection to `path`; a held lock or a file that is not DuckDB's is a clear error."""
    try:
        return duckdb.connect(str(path), read_only=read_only)
    except duckdb.Error as exc:
        text = str(exc)
        if "lock" in text.lower():
            raise StoreLockedError(
                f"database {path} is in use by {holder_of(text)}; wait for that process "
                "to finish or stop it, then run again (DuckDB allows one writer per file)"
            ) from None
        first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
        raise StoreOpenError(
            f"database {path} cannot be opened as a DuckDB database ({first}); give the path "
            "of a tracegrade database, or of a new file to create"
        ) from None


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


class DuckDBStore:
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
        self._con = _connect(self.path, read_only)
        try:
            self._con.execute("SET TimeZone = 'UTC'")
            if not read_only:
                self._con.execute(SCHEMA_SQL)
                self._stamp_schema()
        except BaseException:
            self._con.close()
            raise

    def close(self) -> None:
        """Release the file (and its lock)."""
        self._con.close()

    def __enter__(self) -> DuckDBStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _stamp_schema(self) -> None:
        """Stamp a new file with SCHEMA_VERSION; bring an older file up to it (MIGRATIONS)."""
        found = self._con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
        if not found:
            self._con.execute(
                "INSERT INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)]
            )
            return
        version = int(found[0][0])
        if version >= SCHEMA_VERSION:
            return
        with self.transaction() as con:
            for step in range(version + 1, SCHEMA_VERSION + 1):
                con.execute(MIGRATIONS[step])
            con.execute(SCHEMA_SQL)
            con.execute(
                "UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION)]
            )

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """Everything inside commits together or not at all."""
        self._con.execute("BEGIN TRANSACTION")
        try:
            yield self._con
        except BaseException:
            self._con.execute("ROLLBACK")
            raise
        self._con.execute("COMMIT")

    def sql(self, query: str, params: Sequence[Any] | None = None) -> pl.DataFrame:
        """Run a read query and return its rows."""
        return self._con.sql(query, params=params).pl()

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

    def stored_traces(self) -> pl.DataFrame:
        """Identity and replay columns of every stored trace."""
        return self.sql(
            "SELECT trace_id, content_hash, created_at, agent_id, task_domain, success, "
            "source_file, text_sha FROM traces"
        )

    def has_table(self, name: str) -> bool:
        """True when the database has a table `name` (a read-only store may lack one)."""
        rows = self._con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [name]
        ).fetchall()
        return bool(rows[0][0])

    def columns(self, table: str) -> list[str]:
        """Column names of a table, in order."""
        rows = self._con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
            "ORDER BY ordinal_position",
            [table],
        ).fetchall()
        return [name for (name,) in rows]

    def traces_for(self, trace_ids: pl.Series, columns: Sequence[str]) -> pl.DataFrame:
        """Stored trace rows for the given ids (in no particular order)."""
        ids = pl.DataFrame({"trace_id": trace_ids})
        self._con.register("__ids", ids)
        try:
            selected = ", ".join(f"t.{name}" for name in columns)
            return self._con.sql(
                f"SELECT {selected} FROM traces t SEMI JOIN __ids USING (trace_id)"
            ).pl()
        finally:
            self._con.unregister("__ids")

    def missing_embeddings(self, keys: pl.Series) -> pl.Series:
        """The distinct keys among `keys` that have no stored vector."""
        wanted = pl.DataFrame({"embedding_key": keys.unique(maintain_order=True)})
        self._con.register("__wanted", wanted)
        try:
            found = self._con.sql(
                "SELECT w.embedding_key FROM __wanted w WHERE NOT EXISTS "
                "(SELECT 1 FROM embeddings e WHERE e.embedding_key = w.embedding_key)"
            ).pl()
        finally:
            self._con.unregister("__wanted")
        return found["embedding_key"]

    def put_embeddings(
        self, keys: Sequence[str], vectors: npt.NDArray[np.float32], *, model: str, run_id: str
    ) -> None:
        """Store vectors under their keys; committed at once, since they are a pure cache."""
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

    def vectors(self, keys: pl.Series) -> npt.NDArray[np.float32]:
        """Stored vectors in the order of `keys` (each key must be stored)."""
        order = pl.DataFrame({"embedding_key": keys, "position": np.arange(len(keys))})
        self._con.register("__order", order)
        try:
            table = self._con.sql(
                "SELECT o.position, e.vector FROM __order o JOIN embeddings e USING (embedding_key) "
                "ORDER BY o.position"
            ).to_arrow_table()
        finally:
            self._con.unregister("__order")
        if table.num_rows != len(keys):
            raise LookupError(f"{len(keys) - table.num_rows} embeddings are missing from the store")
        column = table.column("vector").combine_chunks()
        flat = column.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        return flat.reshape(len(keys), -1) if len(keys) else flat.reshape(0, 0)

    def commit_run(self, run: RunHandle, tables: dict[str, Path]) -> None:
        """Write a run's results in one transaction.

        `tables` maps `traces`, `scores`, `quarantine` and `files` to Parquet files. Traces
        replace stored rows with the same id; quarantine and file rows already recorded for
        the same file content are kept as they are, so a re-run adds nothing. On any error the
        transaction rolls back, its temporary views with it.
        """
        with self.transaction() as con:
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
    def _merge(con: duckdb.DuckDBPyConnection, tables: dict[str, Path]) -> None:
        if "traces" in tables:
            con.execute("DELETE FROM traces WHERE trace_id IN (SELECT trace_id FROM __new_traces)")
            con.execute("INSERT INTO traces BY NAME SELECT * FROM __new_traces")
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
