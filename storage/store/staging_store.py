"""A run's staged traces: Parquet files in the run's work folder, one per input file, read
through a temporary DuckDB view on the writer's own connection (its scratch side, which works
without the database file attached, so staging does not hold the file).

Valid rows of every read batch are appended to their file's Parquet file as they are
validated (one row group a batch, in staging order), so the heavy columns (the steps and
their text) are written once, outside DuckDB's memory, and stored once, by the commit. The
stages read back only the columns they need. Rows settled as duplicates or outside a
backfill's range are left out by the view (a temporary table of their `_order`), never
rewritten. A file is named for the view only once it is complete, and the work folder goes
with the run, so a crash leaves nothing half-staged behind. Parquet files, not a temporary
DuckDB table: they are written faster and read back no slower (docs/performance.md).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from storage.names import sql_string
from storage.store.duckdb_store import DuckDBStore
from storage.store.statements import steps_with
from storage.store.work_files import parquet_batches

__all__ = [
    "LIGHT_STEP_FIELDS",
    "StagedFile",
    "create_staging",
    "delete_staged",
    "drop_staging",
    "limit_staged",
    "plan_staged",
    "staged_chunks",
    "staged_count_by_file",
    "staged_repeats",
    "staged_rows",
    "staged_table",
    "staged_view",
]


def staged_table(run_id: str) -> str:
    """The name of the run's staging table."""
    return f"staged_{run_id}"


def _dropped(run_id: str) -> str:
    """The temporary table of the `_order` of the run's staged rows that are left out."""
    return f"dropped_{run_id}"


def _staged_file(folder: Path, index: int) -> Path:
    return folder / f"staged-{index:06d}.parquet"


def create_staging(store: DuckDBStore, run_id: str, schema: pl.Schema, folder: Path) -> None:
    """Create the run's empty staging (files in `folder`, the columns and types of `schema`)
    and the view `staged_table(run_id)` over it."""
    folder.mkdir(parents=True, exist_ok=True)
    empty = pl.DataFrame(schema=schema).to_arrow()
    pq.write_table(empty, _staged_file(folder, 0).with_name("staged-empty.parquet"))
    dropped = _dropped(run_id)
    store.scratch.execute(f"CREATE OR REPLACE TEMP TABLE {dropped} (_order BIGINT)")
    files = sql_string(folder / "staged-*.parquet")
    store.scratch.execute(
        f"CREATE OR REPLACE TEMP VIEW {staged_table(run_id)} AS SELECT * FROM "
        f"read_parquet({files}, union_by_name = true) "
        f"WHERE _order NOT IN (SELECT _order FROM {dropped})"
    )


class StagedFile:
    """One input file's staged rows, appended batch by batch (`append`), then `close`d, which
    names the file for the staging view, or `discard`ed (a file rejected after some batches:
    none of its rows stay).

    The row groups are encoded, compressed and written on a thread of the file's own, while
    the caller reads and validates the next batch (Parquet's writer lets go of the GIL): at
    most WRITES_AHEAD batches wait for it, so memory stays bounded. A failed write is raised
    by the next `append` or by `close`."""

    WRITES_AHEAD = 2
    """Batches handed to the writer thread and not yet written, at most."""

    def __init__(self, folder: Path, index: int, schema: pl.Schema) -> None:
        self.path = _staged_file(folder, index + 1)
        self._partial = self.path.with_name(f".{self.path.name}.partial")
        self._schema = schema
        self._writer: pq.ParquetWriter | None = None
        self._thread: ThreadPoolExecutor | None = None
        self._pending: deque[Future[None]] = deque()
        self._failed = False

    def append(self, rows: pl.DataFrame) -> None:
        """Write validated rows (the staging schema's columns) as one row group."""
        if not rows.height:
            return
        table = rows.select(list(self._schema)).cast(self._schema).to_arrow()
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="staged-file")
        while len(self._pending) >= self.WRITES_AHEAD:
            self._pending.popleft().result()
        self._pending.append(self._thread.submit(self._write, table))

    def _write(self, table: pa.Table) -> None:
        if self._failed:
            return  # the file is discarded: the batches after a failure are not written
        try:
            if self._writer is None:
                self._writer = pq.ParquetWriter(self._partial, table.schema, compression="snappy")
            self._writer.write_table(table)
        except BaseException:
            self._failed = True
            raise

    def _finish_writes(self) -> None:
        """Wait for every handed-over batch; the first failure is raised, after all ended."""
        failure: BaseException | None = None
        while self._pending:
            try:
                self._pending.popleft().result()
            except BaseException as error:  # noqa: BLE001 (raised below, once all ended)
                failure = failure or error
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None
        if failure is not None:
            raise failure

    def close(self) -> None:
        """Finish the file: from now on the staging view reads its rows."""
        try:
            self._finish_writes()
        except BaseException:
            self.discard()
            raise
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            self._partial.replace(self.path)

    def discard(self) -> None:
        """Drop every row of the file."""
        try:
            self._finish_writes()
        except Exception:  # noqa: BLE001, S110 (the rows are dropped either way)
            pass
        finally:
            if self._writer is not None:
                self._writer.close()
                self._writer = None
            self._partial.unlink(missing_ok=True)
            self.path.unlink(missing_ok=True)


def staged_view(
    store: DuckDBStore, source_run: str, run_id: str, low: datetime, high: datetime
) -> None:
    """Stage, for `run_id`, the traces of `source_run` whose created_at lies in [low, high)
    (a view: no copy of the rows)."""
    store.scratch.execute(
        f"CREATE OR REPLACE TEMP VIEW {staged_table(run_id)} AS SELECT * FROM "
        f"{staged_table(source_run)} WHERE created_at >= TIMESTAMPTZ '{low.isoformat()}' "
        f"AND created_at < TIMESTAMPTZ '{high.isoformat()}'"
    )


LIGHT_STEP_FIELDS = ("type", "tool_present", "tool_name")
"""The step fields the value score reads (no text)."""


def staged_rows(
    store: DuckDBStore,
    run_id: str,
    columns: Sequence[str],
    *,
    ids: pl.Series | None = None,
    within: tuple[int, int] | None = None,
    step_fields: Sequence[str] | None = None,
    ordered: bool = True,
) -> pl.DataFrame:
    """Columns of the staged rows (of `ids` only, when given), in staging order. `within`
    (lowest, highest `_order`) bounds the rows read: the scan then skips the table's other
    row groups instead of reading every row's steps to find the ids. With `step_fields`,
    `steps` holds only those fields of each step. A caller that orders the rows itself
    passes `ordered=False`: DuckDB then does not sort them (for a million staged rows, a
    sort holds about 275 MB more)."""
    selected = [
        steps_with(step_fields) if step_fields is not None and name == "steps" else name
        for name in columns
    ]
    query = f"SELECT {', '.join(selected)} FROM {staged_table(run_id)}"
    where = "" if within is None else f" WHERE _order BETWEEN {int(within[0])} AND {int(within[1])}"
    order = " ORDER BY _order" if ordered else ""
    if ids is None:
        return store.scratch.sql(f"{query}{where}{order}")
    return store.scratch.sql_with(
        f"{query} SEMI JOIN __ids USING (trace_id){where}{order}",
        ids=ids.to_frame("trace_id"),
    )


def staged_repeats(store: DuckDBStore, run_id: str, columns: Sequence[str]) -> pl.DataFrame:
    """`columns` of the staged rows whose trace_id is staged more than once, in staging order
    (usually none: the ids are counted in DuckDB, so a run of unique ids reads no rows back)."""
    table = staged_table(run_id)
    return store.scratch.sql(
        f"SELECT {', '.join(columns)} FROM {table} WHERE trace_id IN "
        f"(SELECT trace_id FROM {table} GROUP BY trace_id HAVING count(*) > 1) ORDER BY _order"
    )


def staged_chunks(
    store: DuckDBStore,
    run_id: str,
    ids: Path,
    columns: Sequence[str],
    rows: int,
    *,
    step_fields: Sequence[str] | None = None,
) -> Iterator[pl.DataFrame]:
    """`staged_rows` of the traces the Parquet file `ids` lists (trace_id and _order, in
    `_order`), `rows` traces at a time in staging order: each chunk reads one stretch of the
    staging table (its `_order` bounds), and only one chunk of the ids is held."""
    for chunk in parquet_batches(ids, rows):
        within = (chunk["_order"][0], chunk["_order"][-1])
        yield staged_rows(
            store, run_id, columns, ids=chunk["trace_id"], within=within, step_fields=step_fields
        )


def plan_staged(
    store: DuckDBStore, run_id: str, scope_key: str, plan: Path, fresh: Path
) -> dict[str, int]:
    """Write the staged rows that are new or changed (their content_hash is not the stored
    trace's) to the Parquet file `plan`, in staging order, as the plan of a run without
    novelty replay: trace_id, scope_key (the SQL expression `scope_key`), created_at,
    text_sha, fresh, target, window_start and _order; and their trace_id and _order to
    `fresh`. Done inside DuckDB, so a run of any size holds none of its ids. Returns
    rows_new, rows_changed, rows_unchanged and rows_late (created before the newest stored
    trace of their scope)."""
    table = staged_table(run_id)
    stored = f"SELECT trace_id, content_hash FROM traces SEMI JOIN {table} USING (trace_id)"
    written = store.copy_to(
        f"SELECT s.trace_id, {scope_key} AS scope_key, s.created_at, s.text_sha, "
        "t.content_hash IS NULL AS new, TRUE AS fresh, TRUE AS target, "
        f"0::BIGINT AS window_start, s._order FROM {table} s LEFT JOIN ({stored}) t "
        "USING (trace_id) WHERE t.content_hash IS DISTINCT FROM s.content_hash "
        "ORDER BY s._order",
        plan,
    )
    planned = f"read_parquet({sql_string(plan)})"
    store.scratch.copy_to(f"SELECT trace_id, _order FROM {planned}", fresh)
    newest = f"SELECT {scope_key} AS scope_key, max(created_at) AS newest FROM traces GROUP BY 1"
    counts = store.sql(
        "SELECT count(*) FILTER (WHERE new) AS rows_new, "
        "count(*) FILTER (WHERE NOT new) AS rows_changed, "
        "count(*) FILTER (WHERE p.created_at < n.newest) AS rows_late "
        f"FROM {planned} p LEFT JOIN ({newest}) n USING (scope_key)"
    ).row(0, named=True)
    staged = store.scratch.sql(f"SELECT count(*) AS n FROM {table}")["n"][0]
    return {**counts, "rows_unchanged": int(staged) - written}


def staged_count_by_file(store: DuckDBStore, run_id: str) -> pl.DataFrame:
    """source_file and the number of staged rows of each file."""
    return store.scratch.sql(
        f"SELECT source_file, count(*) AS rows_scored FROM {staged_table(run_id)} "
        "GROUP BY source_file"
    )


def delete_staged(store: DuckDBStore, run_id: str, rows: pl.DataFrame) -> None:
    """Leave out the staged rows named by (source_file, row_number) in `rows`."""
    if rows.height:
        store.scratch.execute_with(
            f"INSERT INTO {_dropped(run_id)} SELECT t._order FROM {staged_table(run_id)} t "
            "JOIN __rows r ON t.source_file = r.source_file AND t.row_number = r.row_number",
            rows=rows.select("source_file", "row_number"),
        )


def limit_staged(store: DuckDBStore, run_id: str, low: object, high: object) -> pl.DataFrame:
    """Keep the staged rows with created_at in [low, high); returns the others' count per
    file (source_file, rows_out_of_range)."""
    table = staged_table(run_id)
    outside = "NOT (created_at >= ? AND created_at < ?)"
    counts = store.scratch.sql(
        f"SELECT source_file, count(*) AS rows_out_of_range FROM {table} WHERE {outside} "
        "GROUP BY source_file",
        [low, high],
    )
    store.scratch.execute(
        f"INSERT INTO {_dropped(run_id)} SELECT _order FROM {table} WHERE {outside}", [low, high]
    )
    return counts


def drop_staging(store: DuckDBStore, run_id: str) -> None:
    """Drop the run's staging view and its table of rows left out, if any (the files go with
    the run's work folder)."""
    store.scratch.drop_temp(staged_table(run_id))
    store.scratch.drop_temp(_dropped(run_id))
