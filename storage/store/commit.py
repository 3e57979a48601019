"""The statements of a run's commit (DuckDBStore.commit_run): the batches that write its rows
to `trace_rows` and `score_rows`, and the one last transaction that publishes them.

A run's rows are invisible until it is published: the views `traces`, `scores` and
`latest_scores` read the rows of runs with `published_at` set. Publishing deletes the stored
versions the run's traces replace, adds the quarantine and file rows, and sets
`published_at`, all in one transaction. Rows of a run that never publishes (it failed, was
stopped or killed, or its plan went stale) are discarded; so are the confidence rows a run
never published (storage/confidence/store.py publishes those).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from storage.names import sql_string
from storage.schema.scoring import latest_scores_select
from storage.store.latest_rows import mark_pending
from transforms.config.sizes import DUCKDB_ROW_GROUP_ROWS, WRITE_ROW_GROUP_ROWS

__all__ = [
    "COMMIT_BATCH_ROWS",
    "LAKE_BATCH_ROWS",
    "PUBLISHED_RUNS",
    "SCORE_TABLES",
    "RunHandle",
    "as_of_run_views",
    "discard_unpublished",
    "hashed_on_ids",
    "has_rows",
    "keeps_latest_scores",
    "merge",
    "one_writer_thread",
    "parquet_rows",
    "parquet_slices",
    "publish",
    "score_batches",
    "score_shards",
    "trace_batches",
    "trace_shards",
]

COMMIT_BATCH_ROWS = WRITE_ROW_GROUP_ROWS
"""Rows a commit writes per transaction unless the run says otherwise: one row group of the
size a run writes (transforms/config/sizes.py), which the transaction writes to the file as it
goes (fewer rows go through the write-ahead log and the commit copies them again), about
1-1.5 s for realistic traces (docs/performance.md)."""

LAKE_BATCH_ROWS = DUCKDB_ROW_GROUP_ROWS
"""Rows a commit into a DuckLake writes per transaction unless the run says otherwise: a
DuckLake has no file lock to let go of between batches, and fewer, larger Parquet files
commit faster (docs/performance.md)."""

SCORE_TABLES = ("score_rows", "latest_score_rows")
"""Where a run writes its score rows, unpublished: the history, and each trace's newest
(`publish` deletes the rows there that the run's supersede)."""


def keeps_latest_scores(rows: Callable[[str], list[Any]], catalog: str = "") -> bool:
    """Whether the database `catalog` (a prefix: "" for the store's own, or "name.") keeps
    each trace's newest score in `latest_score_rows` (schema 7 on): its `latest_scores` then
    reads one row a trace. An older file, opened to read, still has the view that ranks the
    whole history (`rows`: a statement runner such as `Statements.rows`)."""
    try:
        rows(f"SELECT 1 FROM {catalog}latest_score_rows LIMIT 0")
    except duckdb.CatalogException:
        return False
    return True


PUBLISHED_RUNS = "SELECT run_id FROM runs WHERE published_at IS NOT NULL"
"""The runs whose rows the views `traces` and `scores` show (storage/schema/scoring.py)."""


@dataclass(frozen=True)
class RunHandle:
    """The identity of a run in progress."""

    run_id: str
    run_seq: int


def parquet_rows(con: duckdb.DuckDBPyConnection, parquet: Path) -> int:
    """How many rows the Parquet file `parquet` holds."""
    ((total,),) = con.execute(
        f"SELECT count(*) FROM read_parquet({sql_string(parquet)})"
    ).fetchall()
    return int(total)


def parquet_slices(
    parts: list[tuple[Path, int]], rows: int
) -> Iterator[list[tuple[Path, int, int]]]:
    """The rows of the Parquet files `parts` (each with its row count), in order, cut into
    batches of `rows` (the last fewer): each a list of (file, first row, end row) slices, a
    part's rows split across batches where it holds more, small parts joined."""
    batch: list[tuple[Path, int, int]] = []
    held = 0
    for part, total in parts:
        first = 0
        while first < total:
            end = min(first + rows - held, total)
            batch.append((part, first, end))
            held, first = held + end - first, end
            if held == rows:
                yield batch
                batch, held = [], 0
    if batch:
        yield batch


def has_rows(con: duckdb.DuckDBPyConnection, parquet: Path | None) -> bool:
    """True when the Parquet file `parquet` is given and holds a row."""
    return parquet is not None and parquet_rows(con, parquet) > 0


@dataclass(frozen=True)
class _Stretch:
    """Rows `first` to `first + rows` of a file of trace ids (trace_id and _order, in
    `_order`), and the filter on `_order` that bounds them in the staging table."""

    first: int
    rows: int
    where: str


def _stretches(con: duckdb.DuckDBPyConnection, ids: Path, rows: int) -> list[_Stretch]:
    """The traces the file `ids` lists, cut into stretches of up to `rows`: every `rows`-th
    row of the file starts one."""
    firsts = con.execute(
        f"SELECT _order FROM read_parquet({sql_string(ids)}, file_row_number = true) "
        f"WHERE file_row_number % {int(rows)} = 0 ORDER BY file_row_number"
    ).fetchall()
    bounds = [int(first) for (first,) in firsts]
    return [
        _Stretch(
            index * rows,
            rows,
            f"_order >= {low}" + ("" if high is None else f" AND _order < {high}"),
        )
        for index, (low, high) in enumerate(zip(bounds, [*bounds[1:], None], strict=False))
    ]


def _staged_rows(staged: str, ids: Path, stretch: _Stretch, run_id: str) -> str:
    """The staged rows of one stretch: those whose `_order` the stretch's rows of the file
    `ids` list. Only that slice of the file is read (DuckDB pushes the row numbers into the
    scan), and matching `_order` takes the very row the plan chose."""
    return (
        f"SELECT * EXCLUDE (_order), {run_id} AS run_id FROM {staged} WHERE {stretch.where} "
        f"AND _order IN (SELECT _order FROM read_parquet({sql_string(ids)}, "
        f"file_row_number = true) WHERE file_row_number >= {stretch.first} "
        f"AND file_row_number < {stretch.first + stretch.rows})"
    )


@contextmanager
def hashed_on_ids(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """While inside, DuckDB builds the hash table of a trace batch's `IN` on the ids it lists
    (`trace_batches`, `trace_shards`). Both sides of that join are estimated alike (a slice of
    the ids file, a stretch of the staging table), and built on the staged side, steps and
    all, the commit peaked 0.15-0.3 GiB higher. The optimizer is back on when the block ends,
    failed or not: publishing relies on it to pick a join's smaller side."""
    con.execute("SET disabled_optimizers = 'build_side_probe_side'")
    try:
        yield
    finally:
        con.execute("RESET disabled_optimizers")


@contextmanager
def one_writer_thread(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """While inside, DuckDB runs on one thread: a batch of whole row groups then goes to the
    file as whole row groups. On two threads each thread appended a part of the batch as a row
    group of its own, and a 1,000,000-trace commit took 37 s and peaked at 1.1 GiB against
    36 s and 0.83 GiB (docs/performance.md). The threads are back when the block ends, failed
    or not."""
    con.execute("SET threads = 1")
    try:
        yield
    finally:
        con.execute("RESET threads")


def trace_batches(
    scratch: duckdb.DuckDBPyConnection, staged: str, ids: Path, run_id: str, rows: int
) -> Iterator[str]:
    """Statements that each copy up to `rows` of the staged traces that `ids` lists (trace_id
    and _order, in `_order`) into `trace_rows`, as the run `run_id`'s; run them inside
    `hashed_on_ids`."""
    for stretch in _stretches(scratch, ids, rows):
        select = _staged_rows(staged, ids, stretch, sql_string(run_id))
        yield f"INSERT INTO trace_rows BY NAME {select}"


def trace_shards(
    scratch: duckdb.DuckDBPyConnection,
    staged: str,
    ids: Path,
    run_id: str,
    folder: Path,
    rows: int,
) -> Iterator[Path]:
    """The staged traces whose ids `ids` lists, copied to Parquet files of up to `rows` rows
    in `folder`, for workers to store; call it inside `hashed_on_ids`."""
    for part, stretch in enumerate(_stretches(scratch, ids, rows)):
        path = folder / f"traces-{part:06d}.parquet"
        select = _staged_rows(staged, ids, stretch, sql_string(run_id))
        scratch.execute(f"COPY ({select}) TO {sql_string(path)}")
        yield path


def _score_slices(con: duckdb.DuckDBPyConnection, scores: Path, rows: int) -> Iterator[str]:
    """Queries of the scores file's rows, `rows` at a time, in file order."""
    for low in range(0, parquet_rows(con, scores), rows):
        yield (
            f"SELECT * EXCLUDE (file_row_number) FROM read_parquet({sql_string(scores)}, "
            f"file_row_number = true) WHERE file_row_number >= {low} "
            f"AND file_row_number < {low + rows}"
        )


def score_batches(
    con: duckdb.DuckDBPyConnection, scores: Path, run_seq: int, rows: int
) -> Iterator[str]:
    """Statements that each add up to `rows` of the scores file to `score_rows`, numbered
    `run_seq`."""
    for select in _score_slices(con, scores, rows):
        yield "; ".join(
            f"INSERT INTO {table} BY NAME SELECT * REPLACE "
            f"({int(run_seq)}::BIGINT AS run_seq) FROM ({select})"
            for table in SCORE_TABLES
        )


def score_shards(
    con: duckdb.DuckDBPyConnection, scores: Path, folder: Path, rows: int
) -> Iterator[Path]:
    """The scores file cut into Parquet files of up to `rows` rows in `folder`, for workers
    to store."""
    for part, select in enumerate(_score_slices(con, scores, rows)):
        path = folder / f"scores-{part:06d}.parquet"
        con.execute(f"COPY ({select}) TO {sql_string(path)}")
        yield path


def publish(con: duckdb.DuckDBPyConnection, run: RunHandle, *, wrote: bool) -> RunHandle:
    """Make the run's rows the stored ones; `run` as published (renumbered when a run with a
    later sequence number published scores first, so `latest_scores` follows the order of
    the publications). A run that wrote rows is left pending for `latest_trace_rows`: the
    publication of its levels folds it in (storage/store/latest_rows.py)."""
    if wrote:
        run = _newest_seq(con, run)
        # The stored versions of the run's traces, and the newest scores of the traces it
        # scored again.
        for table in ("trace_rows", "latest_score_rows"):
            _delete_superseded(con, table, run.run_id)
        mark_pending(con, run.run_id)
    con.execute(
        "UPDATE runs SET published_at = ? WHERE run_id = ?", [datetime.now(UTC), run.run_id]
    )
    return run


def _delete_superseded(con: duckdb.DuckDBPyConnection, table: str, run_id: str) -> None:
    """Delete the published rows of `table` whose trace the run `run_id` wrote a row of. The
    ids both published and the run's are matched by a join, whose smaller side DuckDB builds:
    a backfill into an empty database matches none, not all of its own."""
    superseded = (
        f"SELECT DISTINCT n.trace_id FROM {table} n JOIN {table} o USING (trace_id) "
        f"WHERE n.run_id = ? AND o.run_id <> ? AND o.run_id IN ({PUBLISHED_RUNS})"
    )
    con.execute(
        f"DELETE FROM {table} WHERE run_id <> ? AND run_id IN ({PUBLISHED_RUNS}) "
        f"AND trace_id IN ({superseded})",
        [run_id, run_id, run_id],
    )


def _newest_seq(con: duckdb.DuckDBPyConnection, run: RunHandle) -> RunHandle:
    ((newest,),) = con.execute("SELECT coalesce(max(run_seq), 0) FROM scores").fetchall()
    if newest <= run.run_seq:
        return run
    ((seq,),) = con.execute("SELECT max(run_seq) + 1 FROM runs").fetchall()
    con.execute("UPDATE runs SET run_seq = ? WHERE run_id = ?", [seq, run.run_id])
    for table in SCORE_TABLES:
        con.execute(f"UPDATE {table} SET run_seq = ? WHERE run_id = ?", [seq, run.run_id])
    return RunHandle(run.run_id, int(seq))


_PUBLISHED_BY = {
    "trace_rows": "published_at",
    "score_rows": "published_at",
    "latest_score_rows": "published_at",
    "confidence_trace_rows": "levels_published_at",
    "confidence_step_rows": "levels_published_at",
}
"""Each table of rows written in batches, and the `runs` column its publication sets."""


def discard_unpublished(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> None:
    """Delete the rows that the runs `run_ids` wrote and never published."""
    for table, column in _PUBLISHED_BY.items():
        con.execute(
            f"DELETE FROM {table} WHERE list_contains(?, run_id) AND run_id IN "
            f"(SELECT run_id FROM runs WHERE {column} IS NULL)",
            [run_ids],
        )


def merge(con: duckdb.DuckDBPyConnection, tables: dict[str, Path]) -> None:
    """Add the quarantine and file rows of `tables` not recorded yet; keep the spans a run
    keeps for later runs (`open_spans`), letting go of those kept before the time it gives
    (`open_until`: storage/spans/open_spans.py)."""
    for name, source in tables.items():
        con.execute(
            f"CREATE OR REPLACE TEMP VIEW __new_{name} AS "
            f"SELECT * FROM read_parquet({sql_string(source)})"
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
    if "open_until" in tables:
        con.execute("DELETE FROM open_spans WHERE kept_at < (SELECT until FROM __new_open_until)")
    if "open_spans" in tables:  # a trace's spans kept again, with what this run added
        con.execute(
            "DELETE FROM open_spans WHERE trace_hex IN (SELECT trace_hex FROM __new_open_spans)"
        )
        con.execute(
            "INSERT INTO open_spans BY NAME SELECT *, current_timestamp AS kept_at "
            "FROM __new_open_spans"
        )
    for name in tables:
        con.execute(f"DROP VIEW __new_{name}")


def as_of_run_views(con: duckdb.DuckDBPyConnection, catalog: str, run_seq: int) -> None:
    """Temporary views `scores` and `latest_scores` over the database attached as `catalog`,
    showing the scores of the runs published up to run `run_seq`: they hide the database's own
    views of those names for `con`."""
    source = f'"{catalog}".main'
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW scores AS SELECT * FROM {source}.score_rows "
        f"WHERE run_seq <= {int(run_seq)} AND run_id IN "
        f"(SELECT run_id FROM {source}.runs WHERE published_at IS NOT NULL)"
    )
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW latest_scores AS {latest_scores_select('temp.main.scores')}"
    )
