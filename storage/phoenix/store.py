"""The spans pulled from Phoenix and what a push wrote back (docs/phoenix.md).

A pull keeps every span it is given in `phoenix_spans`, one page per transaction together with
where the pull stands (`phoenix_pulls`), so a pull stopped anywhere continues after the last
page it kept. Spans reach a scoring run only as whole traces (`complete_traces`); a trace
handed over is marked `delivered_at`, and handed over again, whole, when a later span of it
arrives.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from storage.confidence.store import one_level_source
from storage.names import sql_string
from storage.schema.confidence import newest_levels
from storage.spans.span_targets import file_targets
from storage.store.duckdb_store import DuckDBStore
from transforms.config.scoring import FACTORS
from transforms.otel import otel_trace_id
from transforms.phoenix import PulledSpan

__all__ = [
    "PullState",
    "annotation_rows",
    "changed_annotations",
    "complete_traces",
    "keep_page",
    "mark_delivered",
    "pull_state",
    "record_annotations",
    "step_rows_of",
    "step_targets",
    "trace_spans",
    "trace_targets",
    "traces_not_delivered",
    "undelivered_traces",
]


@dataclass(frozen=True)
class PullState:
    """Where the pulls of one source stand: every span up to row `high_water` is kept; a pull
    in progress also has the newest row it began with (`top`) and the cursor of the next page
    it asks for (`cursor`)."""

    high_water: int = 0
    top: int | None = None
    cursor: str | None = None


def pull_state(store: DuckDBStore, source: str) -> PullState:
    """The stored state of `source`'s pulls (a first pull: nothing kept)."""
    rows = store.rows(
        "SELECT high_water, pending_top, pending_cursor FROM phoenix_pulls WHERE source = ?",
        [source],
    )
    return PullState(*rows[0]) if rows else PullState()


def keep_page(
    store: DuckDBStore,
    source: str,
    spans: list[PulledSpan],
    above: int,
    state: PullState,
    at: datetime,
) -> None:
    """In one transaction: the page's spans after row `above` (a span kept already is not kept
    twice) and the pull's new `state`."""
    fresh = [span for span in spans if span.rowid > above]
    page = pa.table(
        {
            "span_rowid": pa.array([span.rowid for span in fresh], pa.int64()),
            "trace_hex": [span.trace_hex for span in fresh],
            "span_hex": [span.span_hex for span in fresh],
            "parent_hex": pa.array([span.parent_hex for span in fresh], pa.string()),
            "span_kind": pa.array([span.kind for span in fresh], pa.string()),
            "end_time": pa.array([span.end_time for span in fresh], pa.timestamp("us", "UTC")),
            "span": [json.dumps(span.span, default=str) for span in fresh],
        }
    )
    with store.transaction() as con:
        con.register("__page", page)
        try:
            con.execute(
                "INSERT INTO phoenix_spans SELECT ?, p.span_rowid, p.trace_hex, p.span_hex, "
                "p.parent_hex, p.span_kind, p.end_time, p.span, ?, NULL FROM __page p "
                "ANTI JOIN (SELECT span_rowid FROM phoenix_spans WHERE source = ?) k "
                "USING (span_rowid)",
                [source, at, source],
            )
        finally:
            con.unregister("__page")
        con.execute("DELETE FROM phoenix_pulls WHERE source = ?", [source])
        con.execute(
            "INSERT INTO phoenix_pulls VALUES (?, ?, ?, ?, ?)",
            [source, state.high_water, state.top, state.cursor, at],
        )


def complete_traces(
    store: DuckDBStore, source: str, now: datetime, quiet: timedelta, orphan_after: timedelta
) -> list[str]:
    """The traces with a span not yet handed to scoring that are complete: the trace's root
    span (no parent) is kept and none of its spans ended later than `now - quiet`; or, with no
    root, none ended later than `now - orphan_after` (the root will not come)."""
    rows = store.rows(
        """
        SELECT trace_hex FROM phoenix_spans WHERE source = ?
        GROUP BY trace_hex
        HAVING bool_or(delivered_at IS NULL)
           AND max(end_time) <= CASE WHEN bool_or(parent_hex IS NULL) THEN ?::TIMESTAMPTZ
                                     ELSE ?::TIMESTAMPTZ END
        ORDER BY min(span_rowid)
        """,
        [source, now - quiet, now - orphan_after],
    )
    return [row[0] for row in rows]


def _traces(traces: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"trace_hex": traces}, schema={"trace_hex": pl.String})


def undelivered_traces(store: DuckDBStore, source: str) -> int:
    """How many traces have a kept span not yet handed to scoring."""
    return int(
        store.rows(
            "SELECT count(DISTINCT trace_hex) FROM phoenix_spans "
            "WHERE source = ? AND delivered_at IS NULL",
            [source],
        )[0][0]
    )


def trace_spans(store: DuckDBStore, source: str, traces: list[str]) -> list[dict[str, Any]]:
    """Every kept span of `traces`, as Phoenix gave it, in Phoenix's order of arrival."""
    frame = store.sql_with(
        f"SELECT s.span FROM phoenix_spans s SEMI JOIN __traces USING (trace_hex) "
        f"WHERE s.source = {sql_string(source)} ORDER BY s.span_rowid",
        traces=_traces(traces),
    )
    return [json.loads(text) for text in frame["span"]]


def mark_delivered(store: DuckDBStore, source: str, traces: list[str], at: datetime) -> None:
    """`traces`' spans were handed to a scoring run that completed."""
    with store.transaction() as con:
        con.register("__delivered", _traces(traces).to_arrow())
        try:
            con.execute(
                "UPDATE phoenix_spans SET delivered_at = ? WHERE source = ? "
                "AND delivered_at IS NULL AND trace_hex IN (SELECT trace_hex FROM __delivered)",
                [at, source],
            )
        finally:
            con.unregister("__delivered")


def trace_targets(store: DuckDBStore, source: str | None) -> pl.DataFrame:
    """For each stored trace that a pull of `source` (None: of any source) delivered, the span
    its verdicts go on: trace_id (as the OTel import names it), trace_hex, span_hex. A trace's
    root span takes the trace's; an agent span takes those of the agent run it heads
    (`group_by = "agent"`)."""
    rows = store.rows(
        "SELECT DISTINCT trace_hex, span_hex, parent_hex IS NULL, span_kind = 'AGENT' "
        "FROM phoenix_spans WHERE (source = ? OR ? IS NULL) AND delivered_at IS NOT NULL",
        [source, source],
    )
    pairs: dict[str, tuple[str, str]] = {}
    for trace_hex, span_hex, is_root, is_agent in rows:
        if is_root:
            pairs[otel_trace_id(trace_hex)] = (trace_hex, span_hex)
        if is_agent:
            pairs[otel_trace_id(trace_hex, span_hex)] = (trace_hex, span_hex)
    return pl.DataFrame(
        {
            "trace_id": list(pairs),
            "trace_hex": [pair[0] for pair in pairs.values()],
            "span_hex": [pair[1] for pair in pairs.values()],
        },
        schema={"trace_id": pl.String, "trace_hex": pl.String, "span_hex": pl.String},
    )


def traces_not_delivered(store: DuckDBStore, targets: pl.DataFrame) -> int:
    """How many stored traces (their newest scores) are not among `targets` (`trace_targets`):
    traces no pull of the project delivered, which a push leaves alone."""
    found = store.sql_with(
        "SELECT count(*) AS n FROM latest_scores ANTI JOIN __targets USING (trace_id)",
        targets=targets,
    )
    return int(found["n"][0])


def step_targets(store: DuckDBStore, source: str | None, folder: Path) -> pl.DataFrame:
    """For each step of a delivered trace, the span it was made from: trace_id, step_id,
    trace_hex, span_hex. The delivered spans are read back as the scoring run read them (a
    page file in `folder`, then the OTel import's own mapping with its default configuration)."""
    rows = store.rows(
        "SELECT span FROM phoenix_spans WHERE (source = ? OR ? IS NULL) "
        "AND delivered_at IS NOT NULL ORDER BY span_rowid",
        [source, source],
    )
    if not rows:
        return file_targets([])[1]
    folder.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix="delivered-spans-", suffix=".json", dir=folder)
    path = Path(name)
    try:
        with os.fdopen(handle, "w") as page:  # a file of its own: two pushes never share it
            page.write(
                '{"data": [' + ", ".join(text for (text,) in rows) + '], "next_cursor": null}\n'
            )
        return file_targets([path])[1]
    finally:
        path.unlink()


def step_rows_of(store: DuckDBStore, steps: pl.DataFrame) -> pl.DataFrame:
    """The derived confidence of each step of `steps` (step_targets), with its span: one row
    per step, though GRACE plans a thought of several statement lines as several plan steps
    (the lowest of their scores, their penalties together, and how many there were)."""
    return store.sql_with(
        """
        SELECT t.trace_hex, t.span_hex, c.trace_id, any_value(c.run_id) AS run_id,
               min(c.step_index) AS step_index, any_value(c.step_kind) AS step_kind,
               min(c.score) AS score, list_sort(list_distinct(flatten(list(c.penalties))))
               AS penalties, count(*) AS plan_steps
        FROM __steps t JOIN confidence_steps c
          ON c.trace_id = t.trace_id AND c.source_step_id = t.step_id
        WHERE c.source = 'derived'
        GROUP BY t.trace_hex, t.span_hex, c.trace_id, c.source_step_id
        ORDER BY c.trace_id, step_index
        """,
        steps=steps,
    )


def annotation_rows(store: DuckDBStore, targets: pl.DataFrame) -> pl.DataFrame:
    """What a push writes for the traces of `targets`: each one's latest value score, newest
    level with its reason, and latest judge results (one row per metric; metric null on the
    trace's rows without a judgement)."""
    return store.sql_with(
        f"""
        SELECT t.trace_hex, t.span_hex, s.trace_id, s.run_id, s.score, s.shareable,
               {", ".join(f"s.{factor}" for factor in FACTORS)},
               c.level, c.reason, c.aggregate,
               j.metric, j.status AS judge_status, j.score AS judge_score, j.comment
        FROM __targets t
        JOIN latest_scores s USING (trace_id)
        LEFT JOIN {newest_levels("confidence_traces", one_source=one_level_source(store))} c
          USING (trace_id)
        LEFT JOIN (SELECT * FROM latest_judge_results WHERE source = 'traces') j
          ON j.item_id = s.trace_id
        ORDER BY s.trace_id, j.metric
        """,
        targets=targets,
    )


def _sha(payload: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def changed_annotations(
    store: DuckDBStore, source: str, payloads: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The annotations of `payloads` that a push to `source` has not written as they are."""
    written = set(
        store.rows(
            "SELECT span_hex, name, payload_sha FROM phoenix_annotations WHERE source = ?",
            [source],
        )
    )
    return [p for p in payloads if (p["span_id"], p["name"], _sha(p)) not in written]


def record_annotations(
    store: DuckDBStore, source: str, payloads: list[dict[str, Any]], at: datetime
) -> None:
    """Phoenix took `payloads`: remember each as written (the last one per span and name)."""
    frame = pl.DataFrame(
        {
            "span_hex": [p["span_id"] for p in payloads],
            "name": [p["name"] for p in payloads],
            "payload_sha": [_sha(p) for p in payloads],
        },
        schema={"span_hex": pl.String, "name": pl.String, "payload_sha": pl.String},
    )
    with store.transaction() as con:
        con.register("pushed", frame.to_arrow())
        con.execute(
            "DELETE FROM phoenix_annotations a USING pushed p "
            "WHERE a.source = ? AND a.span_hex = p.span_hex AND a.name = p.name",
            [source],
        )
        con.execute(
            "INSERT INTO phoenix_annotations SELECT ?, span_hex, name, payload_sha, ? FROM pushed",
            [source, at],
        )
        con.unregister("pushed")
