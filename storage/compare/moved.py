"""The tasks whose value score moved most between two selections, for the report's comparison
section: each task both sides ran (the pairing columns, as `tracegrade compare` pairs), its
mean value score on each side and the level of each side's newest trace of it."""

from __future__ import annotations

from typing import Any

from storage.compare._sql import check_pair_by, rows_sql, selection_sql
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
    most, either way (`MOVED_COLUMNS`); ties by the task's key.

    Raises:
        InputError: a pairing column that is no column name, or a selection that fails.
    """
    check_pair_by(pair_by)
    keys = ", ".join(f'"{column}"' for column in pair_by)
    rows = rows_sql([("score", "s.score")], selection_sql(baseline), selection_sql(candidate))
    wanted = [*pair_by, "objective", "task_domain", "created_at", "level", "m0"]
    picked = ", ".join(f'"{column}"' for column in dict.fromkeys(wanted))
    newest = ", ".join(
        f"arg_max({column}, created_at) AS newest_{column}"
        for column in ("objective", "task_domain", "level")
    )
    tasks = (
        f"SELECT {keys}, count(*) AS n, avg(m0) AS score, {newest} "
        f"FROM sides WHERE side = '{{side}}' GROUP BY {keys}"
    )
    order = ", ".join(f'b."{column}"' for column in pair_by)
    return store.rows(
        f"""
WITH picked AS (SELECT {picked}, __in_b, __in_c FROM ({rows})),
sides AS (
    SELECT 'b' AS side, * FROM picked WHERE __in_b
    UNION ALL SELECT 'c' AS side, * FROM picked WHERE __in_c
)
SELECT c.newest_objective, c.newest_task_domain, b.n, c.n, b.score, c.score,
    c.score - b.score AS moved, b.newest_level, c.newest_level
FROM ({tasks.format(side="b")}) b JOIN ({tasks.format(side="c")}) c USING ({keys})
WHERE b.score IS NOT NULL AND c.score IS NOT NULL
ORDER BY abs(moved) DESC, {order}
LIMIT {int(limit)}"""
    )
