"""The DuckDB tables of confidence and intervention levels (documented in docs/confidence.md).

They live beside the trace tables in the same database (storage.schema). A run's rows are
written in batches and published in one transaction, replacing the rows of the same
(trace_id, source), so re-running the same input changes nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl

from storage._commit import sql_string
from storage.duckdb_store import DuckDBStore

__all__ = [
    "commit_confidence",
    "confidence_levels",
    "run_levels",
    "run_quarantine_rules",
    "stale_derived_ids",
    "stale_derived_traces",
    "stored_input_hashes",
]


_UNFINISHED_RUNS = "SELECT run_id FROM runs WHERE status <> 'completed'"
_UNFINISHED = f"SELECT trace_id FROM traces WHERE run_id IN ({_UNFINISHED_RUNS})"
"""Traces stored by a run that has not completed: the run in progress, and any that stopped
after its commit and before its confidence step."""


def _only_unfinished_can_be_stale(store: DuckDBStore, config_hash: str) -> bool:
    """True when every trace outside _UNFINISHED has a derived level from `config_hash`: no
    stored level used another configuration, and there are as many levels outside the
    unfinished runs' traces as traces. (A trace's content only changes when a run stores it,
    so a level outside those traces cannot be stale by its input.) Counts, not a join of
    every trace with every level: a nightly run into a large database stays cheap."""
    (other_config, traces, unfinished, leveled), *_ = store.sql(
        f"WITH u AS ({_UNFINISHED}) SELECT "
        "(SELECT count(*) FROM confidence_traces WHERE source = 'derived' AND config_hash <> ?), "
        "(SELECT count(*) FROM traces), (SELECT count(*) FROM u), "
        "(SELECT count(*) FROM confidence_traces c WHERE c.source = 'derived' "
        "AND c.trace_id NOT IN (SELECT trace_id FROM u))",
        [config_hash],
    ).rows()
    return other_config == 0 and leveled == traces - unfinished


def stale_derived_ids(store: DuckDBStore, config_hash: str, *, force: bool) -> pl.DataFrame:
    """The ids (trace_id, sorted; run_id) of stored traces whose derived level is missing, or was
    computed from other content or configuration (all of them with `force`). Only the traces
    of unfinished runs are compared when no other can be stale: they are found by their run
    (the column scans skip other runs' row groups) and only their levels are read."""
    narrow = not force and _only_unfinished_can_be_stale(store, config_hash)
    where = f"WHERE run_id IN ({_UNFINISHED_RUNS})" if narrow else ""
    return store.sql(
        f"WITH t AS (SELECT trace_id, run_id, content_hash FROM traces {where}) "
        "SELECT t.trace_id, t.run_id FROM t LEFT JOIN (SELECT trace_id, input_hash, config_hash "
        "FROM confidence_traces SEMI JOIN t USING (trace_id) WHERE source = 'derived') c "
        "USING (trace_id) "
        "WHERE ? OR c.trace_id IS NULL OR c.input_hash <> t.content_hash "
        "OR c.config_hash <> ? ORDER BY t.trace_id",
        [force, config_hash],
    )


def stale_derived_traces(store: DuckDBStore, ids: pl.DataFrame) -> pl.DataFrame:
    """The stored traces of `ids` (trace_id, run_id), sorted by id: trace_id, content_hash,
    confidence, result_summary, objective and steps (step_id, type, tool_name, input, content,
    output_summary).

    The runs are named in a filter DuckDB applies while it scans, so the steps of traces of
    other runs are never read (a join alone would read every trace's steps)."""
    runs = ", ".join("'" + run.replace("'", "''") + "'" for run in ids["run_id"].unique())
    return store.sql_with(
        "SELECT t.trace_id, t.content_hash, t.confidence, t.result_summary, t.objective, "
        "list_transform(t.steps, lambda s: {'step_id': s.step_id, 'type': s.type, "
        "'tool_name': s.tool_name, 'input': s.input, 'content': s.content, "
        "'output_summary': s.output_summary}) "
        "AS steps "
        f"FROM traces t SEMI JOIN __ids USING (trace_id) WHERE t.run_id IN ({runs or 'NULL'}) "
        "ORDER BY t.trace_id",
        ids=ids.select("trace_id"),
    )


def stored_input_hashes(store: DuckDBStore, source: str) -> pl.DataFrame:
    """trace_id, input_hash and config_hash of the stored levels of one source."""
    return store.sql(
        "SELECT trace_id, input_hash, config_hash FROM confidence_traces WHERE source = ?",
        [source],
    )


def commit_confidence(
    store: DuckDBStore, steps: Path, traces: Path, quarantine: Path | None, run_id: str
) -> None:
    """Write the run's levels and step rows (the part files `traces` and `steps` match, part
    by part, one transaction each, the file let go in between), then publish them with its
    quarantine rows in one last transaction: the views `confidence_traces` and
    `confidence_steps` show the run's rows from then on, in place of the rows of the same
    (trace_id, source) that earlier runs published. A quarantine row already recorded for the
    same file content is kept."""
    for traces_part in sorted(traces.parent.glob(traces.name)):
        steps_part = steps.parent / steps.name.replace("*", traces_part.stem.rsplit("-", 1)[1])
        with store.transaction() as con:
            con.execute(
                "INSERT INTO confidence_trace_rows BY NAME SELECT * FROM read_parquet(?)",
                [str(traces_part)],
            )
            con.execute(
                "INSERT INTO confidence_step_rows BY NAME SELECT * FROM read_parquet(?)",
                [str(steps_part)],
            )
        store.let_others_in()
    with store.transaction() as con:
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
