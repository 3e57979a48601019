"""The tasks whose value score moved most between two selections, for the report's comparison
section: each task both sides ran (the pairing columns, as `tracegrade compare` pairs), its
mean value score on each side and the level of each side's newest trace of it."""

from __future__ import annotations

from typing import Any

from storage.compare._cells import task_keys
from storage.compare._sql import check_pair_by, early_tasks, rows_sql, selection_sql, task_select
from storage.store.statements import Statements

__all__ = ["MOVED_COLUMNS", "moved_tasks"]

MOVED_COLUMNS = (
    "objective",
    "task_domain",
    "baseline_traces",
    "candidate_traces",
    "baseline_score",
    "candidate_score",
    "moved",
    "baseline_level",
    "candidate_level",
)
"""A moved task's columns: the objective and domain of its newest trace, each side's traces
of it, their mean value score, the candidate's less the baseline's, each side's newest level."""


def moved_tasks(
    store: Statements, baseline: str, candidate: str, pair_by: list[str], limit: int
) -> list[tuple[Any, ...]]:
    """The `limit` tasks (`pair_by` columns) both selections ran whose mean value score moved
    most, either way (`MOVED_COLUMNS`); ties by the objective shown, then the id of the
    candidate's newest trace of the task. Tasks are keyed as the comparison keys them
    (`task_columns`: the MD5 of each pairing column, taken of the trace row before its joins),
    and only the objectives of the tasks that may be shown (those ranked within `limit`, ties
    included) are read back: with objectives of 1.7 KB, grouping 1,000,000 traces by their
    text ran out of the store's 256 MB.

    Raises:
        InputError: a pairing column that is no column name, or a selection that fails.
    """
    check_pair_by(pair_by)
    tasks = early_tasks(store, pair_by, ("",))
    rows = rows_sql(
        [("score", "s.score")], selection_sql(baseline), selection_sql(candidate), tasks=tasks
    )
    keys = task_keys(pair_by)
    picked = task_select(pair_by, tasks)
    newest = ", ".join(
        f"arg_max({column}, created_at) AS newest_{column}"
        for column in ("trace_id", "task_domain", "level")
    )
    grouped = (
        f"SELECT {keys}, count(*) AS n, avg(m0) AS score, {newest} "
        f"FROM sides WHERE side = '{{side}}' GROUP BY {keys}"
    )
    return store.rows(
        f"""
WITH picked AS (
    SELECT {picked}, trace_id, task_domain, created_at, level, m0, __in_b, __in_c FROM ({rows})
),
sides AS (
    SELECT 'b' AS side, * FROM picked WHERE __in_b
    UNION ALL SELECT 'c' AS side, * FROM picked WHERE __in_c
),
moved AS (
    SELECT c.newest_trace_id AS shown, c.newest_task_domain AS task_domain, b.n AS nb,
        c.n AS nc, b.score AS sb, c.score AS sc, c.score - b.score AS moved,
        b.newest_level AS lb, c.newest_level AS lc
    FROM ({grouped.format(side="b")}) b JOIN ({grouped.format(side="c")}) c USING ({keys})
    WHERE b.score IS NOT NULL AND c.score IS NOT NULL
    QUALIFY rank() OVER (ORDER BY abs(moved) DESC) <= {int(limit)}
),
objectives AS (
    SELECT trace_id AS shown, any_value(objective) AS objective FROM traces
    WHERE trace_id IN (SELECT shown FROM moved) GROUP BY trace_id
)
SELECT o.objective, m.task_domain, m.nb, m.nc, m.sb, m.sc, m.moved, m.lb, m.lc
FROM moved m LEFT JOIN objectives o USING (shown)
ORDER BY abs(m.moved) DESC, o.objective, m.shown
LIMIT {int(limit)}"""
    )
