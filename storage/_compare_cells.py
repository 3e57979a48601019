"""The cells `storage.compare_store` counts the selected traces into, for
`transforms.compare.stats`: each side's traces (a trace a cell, or `MAX_CELLS` random
buckets), or the tasks both sides ran (paired), each cell a row of counts, sums and sums of
squares, one triple a metric."""

from __future__ import annotations

import numpy as np

from storage._statements import Statements
from transforms.compare.stats import MAX_CELLS, SEED, Cells

__all__ = ["MIN_PAIRS", "ROWS", "paired_cells", "side_cells"]

MIN_PAIRS = 10
"""Fewest tasks both sides ran for the comparison to be paired."""

ROWS = "__compare_rows"
"""The selected traces (side, trace_id, the pairing and breakdown columns, the metrics)."""


def _sums(columns: int, value: str = "m{i}") -> str:
    parts = []
    for i in range(columns):
        v = value.format(i=i)
        parts.append(f"count({v}), sum({v}), sum(({v}) * ({v}))")
    return ", ".join(parts)


def _cells(rows: list[tuple], columns: int, offset: int = 0) -> Cells:
    """Cells from rows whose values from `offset` on are (count, sum, squares) per metric."""
    data = np.array(
        [[float(v) if v is not None else 0.0 for v in row[offset:]] for row in rows],
        dtype=np.float64,
    ).reshape(len(rows), columns, 3)
    return Cells(data[:, :, 0], data[:, :, 1], data[:, :, 2])


def side_cells(store: Statements, side: str, count: int, m: int, where: str) -> Cells:
    """One side's cells: a trace a cell, or `MAX_CELLS` random buckets of them."""
    cell = (
        "row_number() OVER (ORDER BY trace_id)"
        if count <= MAX_CELLS
        else f"hash(trace_id, {SEED}) % {MAX_CELLS}"
    )
    found = store.rows(
        f"SELECT cell, {_sums(m)} FROM (SELECT {cell} AS cell, * FROM {ROWS} "
        f"WHERE side = '{side}' AND {where}) GROUP BY cell ORDER BY cell"
    )
    return _cells(found, m, offset=1)


def paired_cells(
    store: Statements, pair_by: list[str], m: int, counts: dict[str, int], where: str
) -> tuple[str, tuple[Cells, Cells, Cells | None] | None]:
    """How the sides pair by task (the `pair_by` columns), and the cells of the tasks both
    ran (baseline means, candidate means, differences; each side's mean over its traces of
    the task); None where too few tasks are shared."""
    keys = ", ".join(f'"{column}"' for column in pair_by)
    means = ", ".join(f"avg(m{i}) AS m{i}" for i in range(m))
    tasks = (
        f"SELECT side, {keys}, count(*) AS n, {means} FROM {ROWS} WHERE {where} "
        f"GROUP BY side, {keys}"
    )
    joined = (
        f"SELECT b.n AS nb, c.n AS nc, {keys}, "
        + ", ".join(f"b.m{i} AS b{i}, c.m{i} AS c{i}" for i in range(m))
        + f" FROM ({tasks}) b JOIN ({tasks}) c USING ({keys}) WHERE b.side = 'b' AND c.side = 'c'"
    )
    store.execute(f"CREATE OR REPLACE TEMP TABLE __compare_pairs AS {joined}")
    try:
        shared, traces_b, traces_c = store.rows(
            "SELECT count(*), coalesce(sum(nb), 0), coalesce(sum(nc), 0) FROM __compare_pairs"
        )[0]
        what = f"{shared:,} tasks ({', '.join(pair_by)}) ran on both sides"
        if shared < MIN_PAIRS or traces_b * 2 < counts["b"] or traces_c * 2 < counts["c"]:
            return f"two samples: only {what}", None
        cells = _pair_cells(store, pair_by, m, shared)
    finally:
        store.execute("DROP TABLE IF EXISTS __compare_pairs")
    left = (counts["b"] - traces_b) + (counts["c"] - traces_c)
    pairing = (
        f"paired by {', '.join(pair_by)}: {what}, holding {traces_b:,} of the baseline's "
        f"{counts['b']:,} traces and {traces_c:,} of the candidate's {counts['c']:,}"
        + (f"; the other {left:,} traces (tasks on one side only) are left out" if left else "")
    )
    return pairing, cells


def _pair_cells(
    store: Statements, pair_by: list[str], m: int, shared: int
) -> tuple[Cells, Cells, Cells]:
    """Baseline, candidate and difference cells of the shared tasks (a task a cell, or
    `MAX_CELLS` random buckets); a metric counts where both sides have it."""
    both = "CASE WHEN c{i} IS NOT NULL AND b{i} IS NOT NULL THEN {side}{i} END"
    sums = ", ".join(
        [
            _sums(m, both.replace("{side}", "b")),
            _sums(m, both.replace("{side}", "c")),
            _sums(m, "(c{i} - b{i})"),
        ]
    )
    unit = "concat_ws(chr(31), " + ", ".join(f'"{c}"::VARCHAR' for c in pair_by) + ")"
    cell = (
        f"row_number() OVER (ORDER BY {unit})"
        if shared <= MAX_CELLS
        else f"hash({unit}, {SEED}) % {MAX_CELLS}"
    )
    found = store.rows(
        f"SELECT cell, {sums} FROM (SELECT {cell} AS cell, * FROM __compare_pairs) "
        "GROUP BY cell ORDER BY cell"
    )
    flat = _cells(found, 3 * m, offset=1)
    baseline, candidate, pairs = (
        Cells(*(part[:, k * m : (k + 1) * m] for part in flat)) for k in range(3)
    )
    return baseline, candidate, pairs
