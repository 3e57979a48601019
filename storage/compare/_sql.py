"""The SQL `storage.compare.store` reads the stored traces with: what a selection stands for,
the metrics a database can give, and each stored trace with its newest score, level and judge
results, a part of the traces at a time (docs/compare.md)."""

from __future__ import annotations

import re

import duckdb

from storage.compare._cells import Form, task_columns, task_names
from storage.errors import InputError
from storage.names import sql_string
from storage.schema.confidence import newest_levels
from storage.schema.latest import LATEST_TRACE_ROWS, METRIC_COLUMNS, SCORE_METRICS
from storage.schema.scoring import newest_score_rows
from storage.store.statements import Statements
from transforms.config.compare import COLUMN_NAME

__all__ = [
    "BASELINE_CATALOG",
    "LEVELS",
    "candidates_sql",
    "cell_forms",
    "check_pair_by",
    "early_tasks",
    "metrics_of",
    "rows_sql",
    "selection_sql",
    "task_select",
]

LEVELS = ("SILENT", "NOTIFY", "CONFIRM", "ESCALATE")

_RUN = re.compile(r"^run:(\d+)$")
_TIME = re.compile(r"^time:(.*?)\.\.(.*)$")


def check_pair_by(pair_by: list[str]) -> None:
    """Raises InputError for a pairing column that is no column name (it is written into SQL)."""
    for column in pair_by:
        if not COLUMN_NAME.match(column):
            raise InputError(f"--pair-by column {column!r} is not a column name")


def selection_sql(selection: str) -> str:
    """The SQL predicate a selection stands for."""
    text = selection.strip()
    if not text:
        raise InputError("a selection is empty; give run:N, time:START..END or a SQL predicate")
    run = _RUN.match(text)
    if run:
        return f"run_seq = {int(run.group(1))}"
    window = _TIME.match(text)
    if window:
        ends = [
            f"created_at {op} {sql_string(value.strip())}::TIMESTAMPTZ"
            for op, value in ((">=", window.group(1)), ("<", window.group(2)))
            if value.strip()
        ]
        return " AND ".join(ends) or "true"
    return f"({text})"


BASELINE_CATALOG = "__baseline"
"""What a baseline database of its own (`--baseline-db`) is attached as."""


def metrics_of(store: Statements, catalogs: tuple[str, ...] = ("",)) -> list[tuple[str, str]]:
    """(name, SQL over the joined row) of every metric the databases (`catalogs`: prefixes,
    "" for the store's own) can give. The SQL names columns alone: each is a column of one
    table of the joined read (the newest score, the level, the trace, a judge metric), and
    of the one row of `latest_trace_rows` where the read takes that."""
    found = [(name, name) for name in SCORE_METRICS]
    found.append(("confidence", "aggregate"))
    found += [(f"level.{level}", f"(level = '{level}')::DOUBLE") for level in LEVELS]
    found.append(("success", "success::DOUBLE"))
    results = " UNION ".join(
        f"SELECT DISTINCT metric FROM {c}latest_judge_results WHERE score IS NOT NULL"
        for c in catalogs
    )
    judged = store.rows(f"SELECT metric FROM ({results}) ORDER BY 1")
    found += [(f"judge.{metric}", _judge_column(metric)) for (metric,) in judged]
    overall = " UNION ALL ".join(
        f"(SELECT 1 FROM {c}latest_judge_scores WHERE overall_score IS NOT NULL LIMIT 1)"
        for c in catalogs
    )
    if store.rows(overall):
        found.append(("judge.overall", "overall_score"))
    return found


def cell_forms(metrics: list[tuple[str, str]]) -> list[Form]:
    """How each of `metrics` (`metrics_of`) is summed into cells: the value score and its
    factors come with every row (the read is driven by the newest score, whose columns are
    NOT NULL), so they are counted by the traces; the levels' shares are 0 or 1 and null
    together (where a trace has no level), so the first one's count is every one's; the
    success label is 0 or 1."""
    forms = []
    levels = [i for i, (name, _) in enumerate(metrics) if name.startswith("level.")]
    for i, (name, _) in enumerate(metrics):
        if name in SCORE_METRICS:
            forms.append(Form("n", False))
        elif name.startswith("level."):
            forms.append(Form(f"c{levels[0]}", True))
        else:
            forms.append(Form(f"c{i}", name == "success"))
    return forms


def early_tasks(store: Statements, pair_by: list[str], catalogs: tuple[str, ...]) -> str:
    """`task_columns` of `pair_by` when the traces of every database (`catalogs`) hold the
    pairing columns: the read then takes them of each trace row before its joins, which carry
    a few bytes a trace in place of the pairing columns' text; "" when a pairing column is
    the run's or the level (taken after the joins) or names nothing (the read says so)."""
    if not pair_by:
        return ""
    check_pair_by(pair_by)
    tasks = task_columns(pair_by)
    try:
        for c in catalogs:
            store.rows(f"SELECT {tasks} FROM {c}traces LIMIT 0")
    except duckdb.Error:
        return ""
    return tasks


def task_select(pair_by: list[str], tasks: str) -> str:
    """What a query over `rows_sql` selects for the task columns (`task_columns`): their names
    when the read took them of the trace rows (`tasks`, as `early_tasks` gives it), else their
    expressions over its rows."""
    return task_names(pair_by) if tasks else task_columns(pair_by)


def candidates_sql(predicate: str, c: str = "") -> str:
    """The trace id of each stored version of a trace of the database `c` (a prefix: "" or
    "__baseline.") that `predicate` holds for, on the columns a selection sees but the level
    (a predicate on the level fails to bind here). A superset of the traces the read selects:
    the version the read compares (its newest score's) is one of them."""
    return (
        f"SELECT trace_id FROM (SELECT t.* EXCLUDE (steps, run_id), r.run_seq FROM {c}traces t "
        f"LEFT JOIN {c}runs r ON r.run_id = t.run_id) WHERE {predicate}"
    )


def _judge_column(metric: str) -> str:
    return '"j_' + metric.replace('"', '""') + '"'


def _catalog_rows(
    metrics: list[tuple[str, str]],
    c: str,
    part: str = "true",
    one_source: bool = False,
    kept: bool = False,
    tasks: str = "",
    latest: bool = False,
) -> str:
    """Each stored trace of the database `c` (a prefix: "" or "__baseline.") once, with its
    columns and the metrics as m0, m1, ...; `part` (a condition on `{key}`, the trace id) is
    applied to every table read, so that a part of the traces is joined at a time.
    `one_source`: the database holds levels of one source (`one_level_source`,
    `newest_levels`); `kept`: it keeps each trace's newest score (`keeps_latest_scores`),
    else they are found in the history; `tasks`: columns (SQL over the trace's own) to take
    of the trace row before it is joined (`storage.compare._cells.task_columns`: a
    comparison paired by objectives of some kilobytes carried them through the joins and ran
    out of the store's memory); `latest`: the database's `latest_trace_rows` is current
    (`storage.store.latest_rows.is_current`), and its rows are read in place of the join of
    the trace rows, newest scores, runs and levels (only the judge results are joined)."""
    mine = part.format(key="trace_id")
    item = part.format(key="item_id")
    judged = [name[len("judge.") :] for name, _ in metrics if name.startswith("judge.")]
    pivot = ", ".join(
        f"max(score) FILTER (WHERE metric = {sql_string(m)}) AS {_judge_column(m)}"
        for m in judged
        if m != "overall"
    )
    judge = (
        f"LEFT JOIN (SELECT item_id AS trace_id, {pivot} FROM {c}latest_judge_results "
        f"WHERE {item} GROUP BY item_id) j USING (trace_id)"
        if pivot
        else ""
    )
    overall = (
        f"LEFT JOIN (SELECT item_id AS trace_id, overall_score FROM {c}latest_judge_scores "
        f"WHERE {item}) jo USING (trace_id)"
        if any(name == "judge.overall" for name, _ in metrics)
        else ""
    )
    values = ", ".join(f"{expression} AS m{i}" for i, (_, expression) in enumerate(metrics))
    if latest:
        return f"""
    SELECT f.* EXCLUDE ({", ".join(METRIC_COLUMNS)}), {values}
    FROM (SELECT *{", " + tasks if tasks else ""} FROM {c}{LATEST_TRACE_ROWS} WHERE {mine}) f
    {judge} {overall}"""
    levels = f"(SELECT * FROM {c}confidence_traces WHERE {mine})"
    scores = f"(SELECT * FROM {c}scores WHERE {mine})"
    if kept:
        newest = f"SELECT * FROM {c}latest_scores WHERE {mine}"
    elif part == "true":
        newest = f"SELECT * FROM {newest_score_rows(scores)}"
    else:
        # Read twice, the part's scores are kept once; without the explicit CTE DuckDB kept
        # every stored score and only then took the part's (2.5 s against 0.7 s for 2 % of
        # 10,000,000).
        newest = (
            f"WITH __scores AS MATERIALIZED {scores} SELECT * FROM {newest_score_rows('__scores')}"
        )
    return f"""
    SELECT t.* EXCLUDE (steps, run_id), r.run_seq, lv.level, {values}
    FROM ({newest}) s
    JOIN (SELECT *{", " + tasks if tasks else ""} FROM {c}traces WHERE {mine}) t
        USING (trace_id, content_hash)
    LEFT JOIN {c}runs r ON r.run_id = t.run_id
    LEFT JOIN {newest_levels(levels, levels, one_source)} lv USING (trace_id)
    {judge} {overall}"""


def rows_sql(
    metrics: list[tuple[str, str]],
    baseline: str,
    candidate: str,
    apart: bool = False,
    part: str = "true",
    one_source: tuple[bool, bool] = (False, False),
    kept: tuple[bool, bool] = (False, False),
    tasks: str = "",
    latest: tuple[bool, bool] = (False, False),
) -> str:
    """Each selected trace once: its columns, the metrics as m0, m1, ..., and whether the
    baseline (`__in_b`) and the candidate (`__in_c`) select it; `apart`: the baseline is read
    from the database attached as `BASELINE_CATALOG` (a trace of both databases is then two
    rows); `part`: only the traces whose id (`{key}`) it holds; `one_source`: whether the
    baseline's database and the store hold levels of one source (`one_level_source`); `kept`:
    whether they keep each trace's newest score (`keeps_latest_scores`); `tasks`: as
    `_catalog_rows` takes them, of both databases; `latest`: whether their
    `latest_trace_rows` is current (`_catalog_rows`). No
    common table expression: DuckDB would materialise one read twice with every column of
    the traces."""
    own = _catalog_rows(metrics, "", part, one_source[1], kept[1], tasks, latest[1])
    if not apart:  # one read of the stored traces for both sides, each trace once
        return f"""
SELECT *, coalesce({baseline}, false) AS __in_b, coalesce({candidate}, false) AS __in_c
FROM ({own}) WHERE ({baseline}) OR ({candidate})
"""
    theirs = _catalog_rows(
        metrics, f"{BASELINE_CATALOG}.", part, one_source[0], kept[0], tasks, latest[0]
    )
    return f"""
SELECT *, true AS __in_b, false AS __in_c FROM ({theirs}) WHERE {baseline}
UNION ALL BY NAME
SELECT *, false AS __in_b, true AS __in_c FROM ({own}) WHERE {candidate}
"""
