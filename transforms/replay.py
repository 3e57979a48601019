"""Which traces a run must (re)score for novelty, and which stored rows their caches need.

A new trace, or a stored one whose content changed, enters its scope's cache at its place in
(created_at, id) order. The traces after it whose cache window reaches back to it (at most
`max_elements` of them, fewer when the TTL ends sooner) see a different cache and are
re-scored; nothing further is touched. A changed trace also leaves its old place, which
re-scores the traces whose windows held the old version.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import polars as pl

from transforms.novelty import window_bounds

__all__ = ["plan_replay", "scope_key", "scope_key_sql", "trace_text"]

_STANDARD_SCOPES = {"agent": "agent_id", "domain": "task_domain"}


def trace_text() -> pl.Expr:
    """The SDK's novelty text: objective, a space, the step contents joined by spaces."""
    contents = pl.col("steps").list.eval(pl.element().struct.field("content").fill_null(""))
    return (pl.col("objective") + pl.lit(" ") + contents.list.join(" ")).alias("text")


def scope_column(scope: str) -> str | None:
    """The trace column a novelty scope keys its caches on; None for `global` (one cache)."""
    return None if scope == "global" else _STANDARD_SCOPES.get(scope, scope)


def scope_key(scope: str) -> pl.Expr:
    """One string per novelty cache: `global`, or the value of the scope's column.

    Traces without a value (no agent id, say) share one cache, distinct from every value.
    """
    name = scope_column(scope)
    if name is None:
        return pl.lit("global").alias("scope_key")
    column = pl.col(name).cast(pl.String)
    return (pl.when(column.is_null()).then(pl.lit("null")).otherwise(pl.lit("=") + column)).alias(
        "scope_key"
    )


def scope_key_sql(scope: str) -> str:
    """`scope_key` as a DuckDB expression over the trace columns (the same strings)."""
    name = scope_column(scope)
    if name is None:
        return "'global'"
    column = f'"{name}"'
    return f"CASE WHEN {column} IS NULL THEN 'null' ELSE '=' || CAST({column} AS VARCHAR) END"


@dataclass(frozen=True)
class ReplayPlan:
    """The rows a replay reads, in replay order, and what to compute for them.

    `rows` has trace_id, scope_key, created_at, text_sha and `fresh` (new in this run);
    `window_start` indexes into `rows`; `targets` marks the rows to (re)score.
    """

    rows: pl.DataFrame
    window_start: npt.NDArray[np.int64]
    targets: npt.NDArray[np.bool_]

    @property
    def rescored(self) -> pl.Series:
        """Ids of stored traces re-scored because earlier data in their window changed."""
        mask = pl.Series(self.targets) & ~self.rows["fresh"]
        return self.rows.filter(mask)["trace_id"]


_PLAN_COLUMNS = ["trace_id", "scope_key", "created_at", "text_sha"]


def _ordered(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.sort(["scope_key", "created_at", "trace_id"])


def _bounds(frame: pl.DataFrame, max_elements: int, ttl_us: int | None) -> npt.NDArray[np.int64]:
    codes = frame["scope_key"].rle_id().to_numpy()
    times = frame["created_at"].dt.epoch("us").to_numpy()
    return window_bounds(codes, times, max_elements=max_elements, ttl_us=ttl_us)


def _window_holds(marks: npt.NDArray[np.bool_], lo: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """True for row i when some marked row lies in its window [lo_i, i)."""
    before = np.r_[0, np.cumsum(marks, dtype=np.int64)]
    index = np.arange(len(marks))
    return (before[index] - before[lo]) > 0


def plan_replay(
    stored: pl.DataFrame, fresh: pl.DataFrame, *, max_elements: int, ttl_us: int | None
) -> ReplayPlan:
    """Plan the replay of `fresh` traces (new or changed) against the `stored` ones.

    Both frames need trace_id, scope_key, created_at and text_sha; `stored` holds the
    versions already in the database (a changed trace appears in both).
    """
    fresh_ids = fresh["trace_id"]
    old = _ordered(stored.select(_PLAN_COLUMNS))
    replaced = old["trace_id"].is_in(fresh_ids.implode()).to_numpy()
    old_lo = _bounds(old, max_elements, ttl_us)
    disturbed = old.filter(pl.Series(_window_holds(replaced, old_lo) & ~replaced))["trace_id"]

    rows = _ordered(
        pl.concat(
            [
                old.filter(~pl.Series(replaced)).with_columns(fresh=pl.lit(False)),
                fresh.select(_PLAN_COLUMNS).with_columns(fresh=pl.lit(True)),
            ]
        )
    )
    is_fresh = rows["fresh"].to_numpy()
    lo = _bounds(rows, max_elements, ttl_us)
    targets = (
        is_fresh
        | _window_holds(is_fresh, lo)
        | rows["trace_id"].is_in(disturbed.implode()).to_numpy()
    )

    # Keep the targets and every row some target's window reaches.
    index = np.arange(len(rows))
    coverage = np.zeros(len(rows) + 1, dtype=np.int64)
    np.add.at(coverage, lo[targets], 1)
    np.add.at(coverage, index[targets], -1)
    needed = targets | (np.cumsum(coverage[:-1]) > 0)
    needed_before = np.r_[0, np.cumsum(needed, dtype=np.int64)]
    kept = np.flatnonzero(needed)
    return ReplayPlan(
        rows=rows.filter(pl.Series(needed)),
        window_start=needed_before[lo[kept]],
        targets=targets[kept],
    )
