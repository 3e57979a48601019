"""Reads for the HTML report: the aggregates of `storage.report.queries` from an open store,
only for the tables that exist, and the report's file written in one piece."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

from storage.confidence.labels import DEFAULT_LABELS, level_outcomes
from storage.confidence.store import one_level_source
from storage.errors import InputError
from storage.judge.labels import OVERALL, judged_with_labels
from storage.report.queries import (
    LIST_SQL,
    QUERIES,
    SECTION_TABLES,
    TABLE_ROWS,
    fast_form,
    latest_sql,
    levels_sql,
)
from storage.store.commit import keeps_latest_scores
from storage.store.duckdb_store import DuckDBStore
from storage.store.whole_files import replacing
from transforms.judge.agreement import DEFAULT_PASS_THRESHOLD, agreements
from transforms.report.judge_agreement import JudgeAgreement
from transforms.report.outcomes import LevelOutcomes
from transforms.report.table import Table

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
    frames: dict[str, Table] = field(default_factory=dict)
    lists: dict[str, tuple[Table, int, str]] = field(default_factory=dict)
    """name -> (the first rows, how many rows there are in all, the SQL that lists them)."""
    absent: dict[str, list[str]] = field(default_factory=dict)
    """name of an aggregate or table -> the tables it needs that the database lacks."""
    empty_sections: frozenset[str] = frozenset()
    """The sections whose table (SECTION_TABLES) exists and holds no row at all."""
    outcomes: LevelOutcomes | None = None
    """The levels against outcomes; None without levels (see `absent`)."""
    judge_agreement: JudgeAgreement | None = None
    """The judgements against the labels; None without judgements (see `absent`)."""


def _table(store: DuckDBStore, query: str) -> Table:
    """A query's rows as Python values (the aggregates are small: no data frame needed)."""
    columns, _, cursor = store.cursor_rows(query)
    return Table(tuple(columns), cursor.fetchall())


def _tables(store: DuckDBStore) -> set[str]:
    return {name for (name,) in store.rows("SELECT table_name FROM information_schema.tables")}


def _list(store: DuckDBStore, query: str) -> tuple[Table, int]:
    rows = _table(store, f"{query} LIMIT {TABLE_ROWS}")
    total = rows.height
    if total == TABLE_ROWS:
        ((total,),) = store.rows(f"SELECT count(*) FROM ({query})")
    return rows, int(total)


def _time_unit(store: DuckDBStore, tables: set[str], bounds: str) -> str:
    """Day for a window of up to 120 days of traces, week up to 120 weeks, else month."""
    if "scores" not in tables:
        return "day"
    ((span,),) = store.rows(
        "SELECT coalesce(date_diff('day', min(created_at), max(created_at)), 0) AS days "
        f"FROM scores, {bounds} WHERE created_at >= since AND created_at < until"
    )
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


def _judge_agreement(store: DuckDBStore, labels: str) -> JudgeAgreement:
    """The stored judgements against `labels` at the default pass threshold (the report does
    not read the judge configuration). The default labels, the traces' own success, cannot
    be wrong; given ones that are raise."""
    words = _labels_in_words(labels)
    try:
        found = judged_with_labels(store, labels)
    except InputError as error:
        if labels != DEFAULT_LABELS:
            raise
        return JudgeAgreement(words, problem=str(error))
    problem = found.problem(labels)
    if problem is not None:
        return JudgeAgreement(words, unlabelled=found.unlabelled, problem=problem)
    results = agreements(found.scores, found.labels, {}, DEFAULT_PASS_THRESHOLD, OVERALL)
    return JudgeAgreement(words, results, found.unlabelled)


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
        if table in tables and not store.rows(f"SELECT 1 FROM {table} LIMIT 1")
    )
    bounds = window.bounds_sql()
    unit = _time_unit(store, tables, bounds)
    if "latest_scores" in tables:
        store.execute(latest_sql(keeps_latest_scores(store.rows)).replace("__window", bounds))
        if "confidence_traces" in tables:
            store.execute(levels_sql(one_level_source(store)))
            data.outcomes = _outcomes(store, labels)
    for name, (needs, query) in QUERIES.items():
        if set(needs) <= tables:
            sql = query.replace("__window", bounds).replace("__unit", unit)
            data.frames[name] = _table(store, sql)
        else:
            data.absent[name] = sorted(set(needs) - tables)
    if data.outcomes is None:
        data.absent["outcomes"] = sorted({"latest_scores", "confidence_traces"} - tables)
    if {"latest_judge_results", "latest_judge_scores"} <= tables:
        data.judge_agreement = _judge_agreement(store, labels)
    else:
        data.absent["judge_agreement"] = ["judge_results"]
    if "domains" in data.frames:
        data.traces = int(sum(data.frames["domains"].column("traces")))
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
    """plotly.js as the Python package ships it (inlined once per report), read from the
    package's folder without importing the package (a third of a second of Python objects the
    page does not need)."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the plotly package is not installed; make install installs it")
    folder = Path(next(iter(spec.submodule_search_locations)))
    return (folder / "package_data" / "plotly.min.js").read_text(encoding="utf-8")


def write_report_file(path: str | Path, html: str) -> Path:
    """Write the report to `path` whole: a reader never sees half a file."""
    target = Path(path)
    with replacing(target) as partial:
        partial.write_text(html, encoding="utf-8")
    return target
