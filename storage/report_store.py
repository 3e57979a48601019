"""Reads for the HTML report: the aggregates of `storage.report_queries` from an open store,
only for the tables that exist, and the report's file written in one piece."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import polars as pl

from storage.confidence_labels import DEFAULT_LABELS, level_outcomes
from storage.duckdb_store import DuckDBStore
from storage.errors import InputError
from storage.report_queries import (
    LATEST_SQL,
    LEVELS_SQL,
    LIST_SQL,
    QUERIES,
    SECTION_TABLES,
    TABLE_ROWS,
    fast_form,
)
from transforms.report.outcomes import LevelOutcomes

__all__ = [
    "ReportData",
    "ReportWindow",
    "plotly_bundle",
    "read_report_data",
    "write_report_file",
]


@dataclass(frozen=True)
class ReportWindow:
    """The UTC days a report covers, both ends included; None leaves that end open."""

    since: date | None = None
    until: date | None = None

    def bounds_sql(self) -> str:
        """A one-row subquery of the bounds as timestamps (the end is exclusive)."""
        low = (
            f"TIMESTAMPTZ '{self.since.isoformat()}'" if self.since else "'-infinity'::TIMESTAMPTZ"
        )
        high = (
            f"TIMESTAMPTZ '{(self.until + timedelta(days=1)).isoformat()}'"
            if self.until
            else "'infinity'::TIMESTAMPTZ"
        )
        return f"(SELECT {low} AS since, {high} AS until) AS __window"

    def condition(self, column: str) -> str:
        """` AND column >= ... AND column < ...` for the bounds given, as literal SQL."""
        parts = []
        if self.since:
            parts.append(f" AND {column} >= TIMESTAMPTZ '{self.since.isoformat()}'")
        if self.until:
            parts.append(f" AND {column} < TIMESTAMPTZ '{(self.until + timedelta(days=1))}'")
        return "".join(parts)

    def describe(self) -> str:
        """The window in words, for the report's header."""
        if not self.since and not self.until:
            return "all dates"
        return f"{self.since or 'the first day'} to {self.until or 'the last day'} (UTC)"


def _labels_in_words(labels: str) -> str:
    if labels == DEFAULT_LABELS:
        return "each trace's own metadata.success (traces.success)"
    if Path(labels).is_file():
        return f"the labels file {labels}"
    return f"the SQL expression {labels} over the traces table"


@dataclass
class ReportData:
    """What the report draws: aggregates by name, tables of rows, and what is missing."""

    database: str
    window: ReportWindow
    traces: int
    tables: set[str]
    frames: dict[str, pl.DataFrame] = field(default_factory=dict)
    lists: dict[str, tuple[pl.DataFrame, int, str]] = field(default_factory=dict)
    """name -> (the first rows, how many rows there are in all, the SQL that lists them)."""
    absent: dict[str, list[str]] = field(default_factory=dict)
    """name of an aggregate or table -> the tables it needs that the database lacks."""
    empty_sections: frozenset[str] = frozenset()
    """The sections whose table (SECTION_TABLES) exists and holds no row at all."""
    outcomes: LevelOutcomes | None = None
    """The levels against outcomes; None without levels (see `absent`)."""


def _tables(store: DuckDBStore) -> set[str]:
    frame = store.sql("SELECT table_name FROM information_schema.tables")
    return set(frame["table_name"].to_list())


def _list(store: DuckDBStore, query: str) -> tuple[pl.DataFrame, int]:
    rows = store.sql(f"{query} LIMIT {TABLE_ROWS}")
    total = rows.height
    if total == TABLE_ROWS:
        total = int(store.sql(f"SELECT count(*) AS n FROM ({query})")["n"][0])
    return rows, total


def _time_unit(store: DuckDBStore, tables: set[str], bounds: str) -> str:
    """Day for a window of up to 120 days of traces, week up to 120 weeks, else month."""
    if "scores" not in tables:
        return "day"
    span = store.sql(
        "SELECT coalesce(date_diff('day', min(created_at), max(created_at)), 0) AS days "
        f"FROM scores, {bounds} WHERE created_at >= since AND created_at < until"
    )["days"][0]
    return "day" if span <= 120 else "week" if span <= 840 else "month"


def _outcomes(store: DuckDBStore, labels: str) -> LevelOutcomes:
    """The newest levels of the window's traces (`__levels`) against `labels`. The default
    labels, the traces' own success, cannot be wrong; given ones that are raise."""
    try:
        cells, unlabelled = level_outcomes(
            store, "SELECT trace_id, aggregate, level FROM __levels", labels
        )
    except InputError as error:
        if labels != DEFAULT_LABELS:
            raise
        return LevelOutcomes(_labels_in_words(labels), [], 0, str(error))
    return LevelOutcomes(_labels_in_words(labels), cells, unlabelled)


def read_report_data(
    store: DuckDBStore, window: ReportWindow, labels: str = DEFAULT_LABELS
) -> ReportData:
    """Every aggregate and table of the report whose tables exist in `store`'s database;
    `labels` (a labels file or a SQL expression over `traces`) for the levels' outcomes.

    Raises:
        InputError: `labels` were given and cannot be read or are not 0/1.
    """
    tables = _tables(store)
    data = ReportData(store.db, window, 0, tables)
    data.empty_sections = frozenset(
        section
        for section, table in SECTION_TABLES.items()
        if table in tables and store.sql(f"SELECT 1 FROM {table} LIMIT 1").is_empty()
    )
    bounds = window.bounds_sql()
    unit = _time_unit(store, tables, bounds)
    if "latest_scores" in tables:
        store.execute(LATEST_SQL.replace("__window", bounds))
        if "confidence_traces" in tables:
            store.execute(LEVELS_SQL)
            data.outcomes = _outcomes(store, labels)
    for name, (needs, query) in QUERIES.items():
        if set(needs) <= tables:
            sql = query.replace("__window", bounds).replace("__unit", unit)
            data.frames[name] = store.sql(sql)
        else:
            data.absent[name] = sorted(set(needs) - tables)
    if data.outcomes is None:
        data.absent["outcomes"] = sorted({"latest_scores", "confidence_traces"} - tables)
    if "domains" in data.frames:
        data.traces = int(data.frames["domains"]["traces"].sum())
    for name, (needs, template) in LIST_SQL.items():
        if set(needs) <= tables:
            query = template.format(
                window=window.condition("created_at"), judged=window.condition("judged_at")
            )
            rows, total = _list(store, fast_form(query))
            data.lists[name] = (rows, total, query)
        else:
            data.absent[name] = sorted(set(needs) - tables)
    return data


def plotly_bundle() -> str:
    """plotly.js as the Python package ships it (inlined once per report)."""
    from plotly.offline import get_plotlyjs

    return str(get_plotlyjs())


def write_report_file(path: str | Path, html: str) -> Path:
    """Write the report to `path` whole: a reader never sees half a file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    partial.write_text(html, encoding="utf-8")
    os.replace(partial, target)
    return target
