"""The DuckDB tables of confidence and intervention levels (documented in docs/confidence.md).

They live beside the trace tables in the same database (storage.schema). A run's rows are
written in batches and published in one transaction, replacing the rows of the same
(trace_id, source), so re-running the same input changes nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from storage.names import sql_string
from storage.store.commit import COMMIT_BATCH_ROWS, PUBLISHED_RUNS
from storage.store.duckdb_store import DuckDBStore
from storage.store.latest_rows import fold_pending
from storage.store.statements import Statements, steps_with

if TYPE_CHECKING:  # Polars loads where a frame is made: a rerun's check needs none
    import polars as pl

__all__ = [
    "DERIVED_TRACE_COLUMNS",
    "commit_confidence",
    "confidence_levels",
    "derived_levels_current",
    "one_level_source",
    "run_levels",
    "run_quarantine_rules",
    "stale_derived_ids",
    "stale_derived_traces",
    "stored_input_hashes",
]


_UNFINISHED_RUNS = "SELECT run_id FROM runs WHERE status <> 'completed'"


def one_level_source(store: Statements, catalog: str = "") -> bool:
    """Whether the database `catalog` (a prefix: "" for the store's own, or "name.") holds
    levels of at most one source, published or not, so that each trace has at most one level
    row (`storage.schema.confidence.newest_levels`' `one_source`): a cheap scan of one
    low-cardinality column."""
    sql = f"SELECT count(DISTINCT source) FROM {catalog}confidence_trace_rows"
    return int(store.rows(sql)[0][0]) <= 1


_UNFINISHED = f"SELECT trace_id FROM traces WHERE run_id IN ({_UNFINISHED_RUNS})"
"""Traces stored by a run that has not completed: the run in progress, and any that stopped
after its commit and before its confidence step."""


def _level_counts(store: DuckDBStore, config_hash: str) -> tuple[int, int, int, int]:
    """Derived levels of another configuration than `config_hash`, stored traces, traces of
    unfinished runs (_UNFINISHED), and derived levels of the other traces. Counts, not a
    join of every trace with every level: a nightly run into a large database stays cheap."""
    ((other_config, traces, unfinished, leveled),) = store.rows(
        f"WITH u AS ({_UNFINISHED}) SELECT "
        "(SELECT count(*) FROM confidence_traces WHERE source = 'derived' AND config_hash <> ?), "
        "(SELECT count(*) FROM traces), (SELECT count(*) FROM u), "
        "(SELECT count(*) FROM confidence_traces c WHERE c.source = 'derived' "
        "AND c.trace_id NOT IN (SELECT trace_id FROM u))",
        [config_hash],
    )
    return other_config, traces, unfinished, leveled


def _only_unfinished_can_be_stale(store: DuckDBStore, config_hash: str) -> bool:
    """True when every trace outside _UNFINISHED has a derived level from `config_hash`: no
    stored level used another configuration, and there are as many levels outside the
    unfinished runs' traces as traces. (A trace's content only changes when a run stores it,
    so a level outside those traces cannot be stale by its input.)"""
    other_config, traces, unfinished, leveled = _level_counts(store, config_hash)
    return other_config == 0 and leveled == traces - unfinished


def derived_levels_current(store: DuckDBStore, config_hash: str) -> bool:
    """True when every stored trace has its derived level from `config_hash` and no run left
    traces unfinished: a confidence step would compute nothing."""
    other_config, traces, unfinished, leveled = _level_counts(store, config_hash)
    return other_config == 0 and unfinished == 0 and leveled == traces


def stale_derived_ids(store: DuckDBStore, config_hash: str, path: Path, *, force: bool) -> int:
    """Write to the Parquet file `path` the ids (trace_id, run_id, content_hash, place) of
    stored traces whose derived level is missing, or was computed from other content or
    configuration (all of them with `force`), in the order they are stored; returns how
    many. `place` is the
    row's position in `trace_rows` (null in a DuckLake), which `stale_derived_traces` reads a
    stretch of. DuckDB writes the file, so a database of any size holds none of its ids in
    this process. Only the traces of unfinished runs are compared when no other can be
    stale: they are found by their run (the column scans skip other runs' row groups).
    Either way the levels are joined as they are: pre-filtering them by a join with the
    traces ran out of DuckDB's memory limit at 1,000,000 traces and was slower for a nightly
    run's few (docs/performance.md). `force` compares nothing."""
    narrow = not force and _only_unfinished_can_be_stale(store, config_hash)
    unfinished = f"AND run_id IN ({_UNFINISHED_RUNS})" if narrow else ""
    place = "rowid" if store.location.catalog is None else "NULL::BIGINT"
    stored = (
        f"SELECT trace_id, run_id, content_hash, {place} AS place FROM trace_rows "
        f"WHERE run_id IN ({PUBLISHED_RUNS}) {unfinished}"
    )
    if force:
        return store.copy_to(
            f"SELECT trace_id, run_id, content_hash, place FROM ({stored}) "
            "ORDER BY place, trace_id",
            path,
        )
    return store.copy_to(
        f"WITH t AS ({stored}) SELECT t.trace_id, t.run_id, t.content_hash, t.place "
        "FROM t LEFT JOIN "
        "(SELECT trace_id, input_hash, config_hash FROM confidence_traces "
        "WHERE source = 'derived') c "
        "USING (trace_id) WHERE c.trace_id IS NULL OR c.input_hash <> t.content_hash "
        "OR c.config_hash <> ? ORDER BY t.place, t.trace_id",
        path,
        [config_hash],
    )


_DERIVED_STEP_FIELDS = ("step_id", "type", "tool_name", "input", "content", "output_summary")
"""The step fields derived mode reads."""

DERIVED_TRACE_COLUMNS = (
    "t.trace_id, t.content_hash, t.confidence, t.result_summary, t.objective, "
    f"{steps_with(_DERIVED_STEP_FIELDS)}"
)
"""The select list of a stored trace (`t`) as derived mode reads it."""


def stale_derived_traces(store: DuckDBStore, ids: pl.DataFrame) -> pl.DataFrame:
    """The stored traces of `ids` (trace_id, run_id, place), sorted by id: trace_id,
    content_hash, confidence, result_summary, objective and steps (step_id, type, tool_name,
    input, content, output_summary).

    The runs are named in a filter DuckDB applies while it scans, so the steps of traces of
    other runs are never read (a join alone would read every trace's steps). The ids' places
    bound the scan to their stretch of `trace_rows`, so reading a database in chunks reads
    each stored trace once, not once per chunk. Places are a hint: when another process
    rewrote the table since they were read, the traces not found there are read without it."""
    runs = ", ".join(sql_string(run) for run in ids["run_id"].unique())

    def select(table: str, within: str = "") -> str:
        return (
            f"SELECT {DERIVED_TRACE_COLUMNS} FROM {table} t SEMI JOIN __ids "
            f"USING (trace_id) WHERE t.run_id IN ({runs or 'NULL'}) {within} ORDER BY t.trace_id"
        )

    import polars as pl

    wanted = ids.select("trace_id")
    places = ids["place"] if "place" in ids.columns else pl.Series([None], dtype=pl.Int64)
    if places.null_count() == 0:
        rows = places.cast(pl.Int64).to_numpy()
        low, high = rows.min(), rows.max()
        within = f"AND t.rowid BETWEEN {int(low)} AND {int(high)}"
        found = store.sql_with(select("trace_rows", within), ids=wanted)
        if found.height == ids.height:
            return found
    return store.sql_with(select("traces"), ids=wanted)


def split_staged_levels(
    store: DuckDBStore, computed: Path, fresh: Path, stale: Path, covered: Path
) -> None:
    """Of the stale traces in the work file `stale` (`stale_derived_ids`), write to `covered`
    (trace_id, _order) those whose level a scoring run computed while staging (`computed`, a
    glob of its level parts) from the content it stored (`fresh`, the staged rows it kept),
    and leave in `stale` only the others, in their order. Only work files are read: the
    database file is not attached."""
    store.scratch.copy_to(
        f"SELECT c.trace_id, c._order FROM read_parquet({sql_string(computed)}) c "
        f"SEMI JOIN read_parquet({sql_string(fresh)}) f USING (_order) "
        f"SEMI JOIN read_parquet({sql_string(stale)}) s "
        "ON s.trace_id = c.trace_id AND s.content_hash = c.input_hash ORDER BY c._order",
        covered,
    )
    rest = stale.with_name(f"rest-{stale.name}")
    store.scratch.copy_to(
        f"SELECT s.* FROM read_parquet({sql_string(stale)}) s ANTI JOIN "
        f"read_parquet({sql_string(covered)}) c USING (trace_id) ORDER BY s.place, s.trace_id",
        rest,
    )
    rest.replace(stale)


def stored_input_hashes(store: DuckDBStore, source: str) -> pl.DataFrame:
    """trace_id, input_hash and config_hash of the stored levels of one source."""
    return store.sql(
        "SELECT trace_id, input_hash, config_hash FROM confidence_traces WHERE source = ?",
        [source],
    )


_RUN_COLUMNS = "COLUMNS(c -> c NOT IN ('_order', 'run_id', 'file_row_number'))"
"""A part's columns but its staging order, run and row numbers: parts computed while a scoring
run read its input carry `_order`, and a backfill's chunk commits levels its archive run
computed."""


STEP_BATCH_ROWS = 2 * COMMIT_BATCH_ROWS
"""Step rows a level commit writes per transaction into a DuckDB file: two of the run's row
groups. A step row is a few numbers, about a tenth of a trace's size, so a batch of 61,440
held the file 0.6 s at most in a run of 200,000 realistic traces, and the step rows took 4.5
s against 6.4 s in batches of 30,720 (docs/performance.md). A DuckLake's batches are larger
already."""


def commit_confidence(
    store: DuckDBStore, steps: Path, traces: Path, quarantine: Path | None, run_id: str
) -> None:
    """Write the run's levels and step rows (the part files `traces` and `steps` match, in
    batches of whole row groups, one transaction each, the file let go in between as a scoring
    commit lets it go; every row as the run's own, `run_id`), then publish them with its
    quarantine rows in one last transaction: the views `confidence_traces` and
    `confidence_steps` show the run's rows from then on, in place of the rows of the same
    (trace_id, source) that earlier runs published. A quarantine row already recorded for the
    same file content is kept."""
    written = (
        ("confidence_trace_rows", traces, None),
        ("confidence_step_rows", steps, max(store.batch_rows(), STEP_BATCH_ROWS)),
    )
    with store.one_writer_thread():
        for table, pattern, rows in written:
            for batch in store.row_batches(sorted(pattern.parent.glob(pattern.name)), rows):
                with store.batch(table) as con:
                    for part, first, end in batch:
                        con.execute(
                            f"INSERT INTO {table} BY NAME SELECT {_RUN_COLUMNS}, ? AS run_id "
                            "FROM read_parquet(?, file_row_number = true) "
                            "WHERE file_row_number >= ? AND file_row_number < ?",
                            [run_id, str(part), first, end],
                        )
    with store.batch("publish levels") as con:
        _publish_levels(con, run_id)
        if quarantine is not None:
            con.execute(
                "INSERT INTO confidence_quarantine BY NAME "
                "SELECT ? AS run_id, q.* FROM read_parquet(?) q WHERE NOT EXISTS ("
                "SELECT 1 FROM confidence_quarantine o WHERE o.file = q.file "
                "AND o.file_hash = q.file_hash AND o.row_number IS NOT DISTINCT FROM q.row_number "
                "AND o.rule = q.rule)",
                [run_id, str(quarantine)],
            )


def _publish_levels(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    con.execute(
        "CREATE OR REPLACE TEMP VIEW __mine AS SELECT trace_id, source "
        f"FROM confidence_trace_rows WHERE run_id = {sql_string(run_id)}"
    )
    # New traces (a nightly run's usual case) have no rows to replace: the step table, ten
    # rows a trace, is only scanned when some trace is levelled again.
    ((replaced,),) = con.execute(
        "SELECT count(*) FROM confidence_traces s SEMI JOIN __mine n "
        "ON s.trace_id = n.trace_id AND s.source = n.source"
    ).fetchall()
    if replaced:
        for table in ("confidence_step_rows", "confidence_trace_rows"):
            con.execute(
                f"DELETE FROM {table} s USING __mine n WHERE s.trace_id = n.trace_id "
                "AND s.source = n.source AND s.run_id <> ? AND s.run_id IN "
                "(SELECT run_id FROM runs WHERE levels_published_at IS NOT NULL)",
                [run_id],
            )
    con.execute("DROP VIEW __mine")
    con.execute(
        "UPDATE runs SET levels_published_at = ? WHERE run_id = ?", [datetime.now(UTC), run_id]
    )
    # The traces of this run and of the scoring runs waiting for their levels, as now
    # published, into the comparison's table (storage/store/latest_rows.py).
    fold_pending(con, [run_id])


def confidence_levels(store: DuckDBStore, source: str, run_ids: list[str]) -> pl.DataFrame:
    """Level counts of the traces that the given runs scored (scores.run_id), for summaries."""
    return store.sql(
        "SELECT c.level, count(*) AS traces FROM confidence_traces c "
        "SEMI JOIN (SELECT trace_id FROM scores WHERE list_contains(?, run_id)) s "
        "USING (trace_id) WHERE c.source = ? GROUP BY c.level",
        [run_ids, source],
    )


def run_quarantine_rules(store: DuckDBStore, run_id: str) -> pl.DataFrame:
    """The factor rows the run `run_id` quarantined, by rule: rule, rows, example."""
    return store.sql(
        "SELECT rule, count(*) AS rows, any_value(reason) AS example FROM confidence_quarantine "
        "WHERE run_id = ? GROUP BY rule ORDER BY rows DESC, rule",
        [run_id],
    )


def run_levels(store: DuckDBStore, run_id: str) -> pl.DataFrame:
    """Level counts of the traces the run `run_id` wrote: level, traces."""
    return store.sql(
        "SELECT level, count(*) AS traces FROM confidence_traces WHERE run_id = ? GROUP BY level",
        [run_id],
    )
