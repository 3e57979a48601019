"""The cells `storage.compare.store` counts the selected traces into, for
`transforms.compare.stats`: every group of a breakdown at once (the whole comparison is one
group), each side's traces, or the tasks both sides ran (paired), each unit in one of
`MAX_CELLS` cells by a hash of its key. A cell is a row of counts, sums and sums of squares,
one triple a metric; a group's side is `MAX_CELLS` such rows, most of them empty when it holds
few units."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import polars as pl

from storage.names import sql_string
from storage.store.statements import Statements
from transforms.compare.stats import MAX_CELLS, SEED, Cells
from transforms.words import NONE

__all__ = [
    "CELL",
    "MIN_PAIRS",
    "ROWS",
    "ROWS_ONCE",
    "TRACE_CELL",
    "WHOLE",
    "Form",
    "Paired",
    "Side",
    "empty_cells",
    "general_forms",
    "paired_cells",
    "pooled_sides",
    "side_cells",
    "stored_metric",
    "task_columns",
    "task_keys",
    "task_names",
]

MIN_PAIRS = 10
"""Fewest tasks both sides ran for the comparison to be paired."""

ROWS = "__compare_rows"
"""The selected traces (side, the cell of each, the pairing and breakdown columns, the
metrics; the trace id where two databases are compared)."""

ROWS_ONCE = "__compare_rows_once"
"""The rows of `ROWS` read in another order (`storage.compare.store`): cheaper for a grouping
of few groups, dearer for one of many."""

MANY_GROUPS = 100_000
"""Groups (a breakdown's values, each side, `MAX_CELLS` cells) past which a grouping reads
`ROWS` rather than `ROWS_ONCE`."""

CELL = "__cell"
"""The column of `ROWS` that names a trace's cell."""

CELL_TYPE = "USMALLINT"
"""The type a cell's number is kept in (`MAX_CELLS` fits): the selected traces' table of a
comparison of 10,000,000 traces spills out of the store's memory, and each of its bytes is
written out and read back by every grouping that follows."""
assert MAX_CELLS <= 2**16

TRACE_CELL = f"(hash(trace_id, {SEED}) % {MAX_CELLS})::{CELL_TYPE}"
"""A trace's cell: a hash of its id."""


@dataclass(frozen=True)
class Paired:
    """One group's tasks both sides ran: how many, their traces, and their cells."""

    tasks: int
    traces: tuple[int, int]
    baseline: Cells
    candidate: Cells
    pairs: Cells


class Form(NamedTuple):
    """How a metric's cell sums are taken in `side_cells`: `counted` names the column that
    holds how many values a cell has of it (`n`, the traces, for a metric no trace lacks; another
    metric's `c{j}` for one null exactly where that one is; its own `c{i}` otherwise), and
    `binary` says its values are 0 or 1, whose squares are the values (their sum is the sum).
    Exact either way: the same counts and sums as the general form, in fewer aggregates (at
    10,000,000 traces, 27 aggregates a cell where 40 were: the 409,600 cells of 50 agents
    4.5 s against 5.1 s in a comparison, 3.4 s against 4.9 s alone; docs/compare.md)."""

    counted: str
    binary: bool


def general_forms(m: int) -> list[Form]:
    """`m` metrics with nothing known of them: each counted and squared."""
    return [Form(f"c{i}", False) for i in range(m)]


def stored_metric(i: int, form: Form) -> str:
    """The select item that keeps metric `i` in the selected traces' table (`ROWS`): a metric
    whose values are 0 or 1 as one byte, not eight (the levels' shares, the success label;
    the sums and means taken of it are the same numbers, integers up to 2**53 being exact
    doubles), the others as they are."""
    return f"m{i}::UTINYINT AS m{i}" if form.binary else f"m{i}"


def _sums(
    forms: Sequence[Form], value: str = "m{i}", prefix: str = "", squares: bool = True
) -> str:
    parts = []
    for i, form in enumerate(forms):
        v = value.format(i=i)
        if form.counted == f"c{i}":
            parts.append(f'count({v}) AS "{prefix}c{i}"')
        # A 0-or-1 metric may be kept as an integer (`stored_metric`): its sum is one too.
        parts.append(f'coalesce(sum({v}), 0)::DOUBLE AS "{prefix}s{i}"')
        if squares and not form.binary:
            parts.append(_square(v, f"{prefix}q{i}"))
    return ", ".join(parts)


def _square(value: str, name: str) -> str:
    return f'coalesce(sum(({value}) * ({value})), 0) AS "{name}"'


def _dense(
    frame: pl.DataFrame,
    forms: Sequence[Form],
    prefix: str = "",
    squares: dict[str, float] | None = None,
) -> Cells:
    """The `MAX_CELLS` cells of one group's side from its non-empty rows (`cell`, and the
    counts, sums and squares of `_sums`); `squares`: the group's side's sums of squares
    (`q{i}`) where its rows hold none, put in its first cell (only their sum over the cells
    is read: `Cells.variance`)."""
    at = frame["cell"].to_numpy()
    columns = {
        "c": [form.counted if form.counted == "n" else f"{prefix}{form.counted}" for form in forms],
        "s": [f"{prefix}s{i}" for i in range(len(forms))],
        "q": [f"{prefix}{'s' if form.binary else 'q'}{i}" for i, form in enumerate(forms)],
    }
    parts = []
    for kind in ("c", "s", "q"):
        dense = np.zeros((MAX_CELLS, len(forms)))
        for i, name in enumerate(columns[kind]):
            if squares is not None and name in squares:
                dense[0, i] = squares[name]
            else:
                dense[at, i] = frame[name].to_numpy().astype(np.float64)
        parts.append(dense)
    return Cells(*parts)


WHOLE = ("", "all")
"""The (column, value) key of the whole comparison in `side_cells`."""


@dataclass(frozen=True)
class Side:
    """One group's side: its traces and their cells."""

    traces: int
    cells: Cells


def side_cells(
    store: Statements, breakdowns: tuple[str, ...], forms: Sequence[Form]
) -> dict[tuple[str, str], dict[str, Side]]:
    """Each side's cells of the metrics `forms` describes (a trace in the cell `TRACE_CELL` names), of the whole
    (`WHOLE`) and of each value of each column of `breakdowns` (null as `NONE`), keyed by
    (column, value) and then side. One query a breakdown: as grouping sets of one query, the
    cells of 10,000,000 traces ran out of the store's 256 MB. The whole is the sum of the
    first breakdown's values, whose groups hold every trace once (counted on its own, it took
    4.3 s of a comparison of 9,500,000 traces). The sums of squares are taken a group's side
    at a time, not a cell at a time (only their sum is read), every breakdown's from one
    grouping (`_group_squares`): at 10,000,000 traces the 409,600 cells of 50 agents took
    2.7 s in 18 aggregates and the squares of all groups 0.9 s, where the 26 aggregates of
    the cells with their squares took 5.0-6.0 s (docs/compare.md)."""
    found: dict[tuple[str, str], dict[str, Side]] = {}
    columns = breakdowns or (WHOLE[0],)
    values = {column: _value(column) for column in columns}
    squares = _group_squares(store, values, forms)
    for column in columns:
        named = {value for (c, value, _) in squares if c == column}
        rows = ROWS if 2 * MAX_CELLS * len(named) > MANY_GROUPS else ROWS_ONCE
        frame = store.sql(
            f"SELECT {values[column]} AS value, side, {CELL} AS cell, count(*) AS n, "
            f"{_sums(forms, squares=False)} FROM {rows} GROUP BY ALL"
        )
        # Each group's side in the order of its value and side (the whole adds the groups up
        # in that order), its rows in any: each fills its own cell. Not sorted by DuckDB (its
        # ORDER BY of 409,600 cells took 1-2 s) nor row by row here (0.13 s).
        parts = frame.partition_by("value", "side", as_dict=True)
        for (named, side), part in sorted(parts.items(), key=lambda item: item[0]):
            group = found.setdefault((column, str(named)), {})
            held = squares[(column, str(named), str(side))]
            group[str(side)] = Side(int(part["n"].sum()), _dense(part, forms, squares=held))
    if breakdowns:
        found[WHOLE] = pooled_sides(
            [g for (c, _), g in found.items() if c == breakdowns[0]], len(forms)
        )
    return found


def _value(column: str) -> str:
    """A breakdown's value of a row (`WHOLE`'s for the column "")."""
    if not column:
        return sql_string(WHOLE[1])
    return f'coalesce("{column}"::VARCHAR, {sql_string(NONE)})'


def _group_squares(
    store: Statements, values: dict[str, str], forms: Sequence[Form]
) -> dict[tuple[str, str, str], dict[str, float]]:
    """The sums of squares (`q{i}`, of the metrics whose squares are not their values) of each
    (column, value, side) of `values` (a breakdown's value SQL by column), from one grouping
    by every breakdown's value at once (a few hundred groups), added up here."""
    squared = [i for i, form in enumerate(forms) if not form.binary]
    keys = ", ".join(f"{sql} AS v{k}" for k, sql in enumerate(values.values()))
    sums = ", ".join([_square(f"m{i}", f"q{i}") for i in squared] or ["0 AS none"])
    found: dict[tuple[str, str, str], dict[str, float]] = {}
    frame = store.sql(f"SELECT {keys}, side, {sums} FROM {ROWS_ONCE} GROUP BY ALL")
    for row in frame.iter_rows(named=True):
        for k, column in enumerate(values):
            held = found.setdefault((column, str(row[f"v{k}"]), str(row["side"])), {})
            for i in squared:
                held[f"q{i}"] = held.get(f"q{i}", 0.0) + float(row[f"q{i}"])
    return found


def empty_cells(m: int) -> Cells:
    """`MAX_CELLS` cells of `m` metrics holding nothing."""
    return Cells(*(np.zeros((MAX_CELLS, m)) for _ in range(3)))


def pooled_sides(groups: list[dict[str, Side]], m: int) -> dict[str, Side]:
    """Groups that share no trace as one group: each side's traces and cells added up."""
    found = {}
    for side in ("b", "c"):
        held = [group[side] for group in groups if side in group]
        cells = empty_cells(m)
        for one in held:
            cells = Cells(*(a + b for a, b in zip(cells, one.cells, strict=True)))
        found[side] = Side(sum(one.traces for one in held), cells)
    return found


TASK_CELL = "__task_cell"
"""The column of `ROWS` that names the cell of a trace's task (when the comparison pairs)."""


def task_columns(pair_by: list[str]) -> str:
    """The SQL, over a read trace, of its task's key (`pair_by` columns) as `ROWS` keeps it: each
    column's text as a 128-bit MD5 (`__task0`, `__task1`, ...; null where the column is) and
    the task's cell (`TASK_CELL`, a hash of the columns' text). Kept as text, objectives of a
    few kilobytes filled the store's 256 MB: a comparison of 1,000,000 such traces ran out of
    memory pairing them (docs/compare.md)."""
    unit = "concat_ws(chr(31), " + ", ".join(f'"{c}"::VARCHAR' for c in pair_by) + ")"
    keys = "".join(f'md5_number("{c}"::VARCHAR) AS __task{i}, ' for i, c in enumerate(pair_by))
    return f"{keys}(hash({unit}, {SEED}) % {MAX_CELLS})::{CELL_TYPE} AS {TASK_CELL}"


def task_keys(pair_by: list[str]) -> str:
    """The names of the columns `task_columns` keeps a task's key in."""
    return ", ".join(f"__task{i}" for i in range(len(pair_by)))


def task_names(pair_by: list[str]) -> str:
    """The names of the columns `task_columns` makes."""
    return f"{task_keys(pair_by)}, {TASK_CELL}"


_DIFFERENCE = (
    "(CASE WHEN abs(c{i} - b{i}) <= 1e-12 * greatest(abs(b{i}), abs(c{i})) THEN 0 "
    "ELSE c{i} - b{i} END)"
)
"""A task's difference, candidate less baseline: 0 where the two means differ by a rounding
only. Each is a mean of some traces, added up in the order they were read, which a DuckLake,
the joined rows of an older file or another thread may change: a factor scored alike on both
sides then differed by 1e-19, and the bootstrap, whose differences were all that small, found
it a change (p = 0.016)."""


def paired_cells(store: Statements, group: str, pair_by: list[str], m: int) -> dict[str, Paired]:
    """Each group's tasks (the `pair_by` columns, as `task_columns` keeps them) both sides
    ran: each side's mean over its traces of the task, and the cells of the baseline's and the
    candidate's means and of their differences (a metric counts where both sides have it), a
    task in the cell a hash of its key names."""
    keys = task_keys(pair_by)
    means = ", ".join(f"avg(m{i}) AS m{i}" for i in range(m))
    tasks = (
        f"SELECT {group} AS g, side, {keys}, {TASK_CELL}, count(*) AS n, {means} "
        f"FROM {ROWS} GROUP BY ALL"
    )
    joined = (
        f"SELECT g, {TASK_CELL} AS cell, b.n AS nb, c.n AS nc, "
        + ", ".join(f"b.m{i} AS b{i}, c.m{i} AS c{i}" for i in range(m))
        + f" FROM ({tasks}) b JOIN ({tasks}) c USING (g, {keys}, {TASK_CELL}) "
        "WHERE b.side = 'b' AND c.side = 'c'"
    )
    both = "CASE WHEN c{i} IS NOT NULL AND b{i} IS NOT NULL THEN {side}{i} END"
    sums = ", ".join(
        [
            _sums(general_forms(m), both.replace("{side}", "b"), "b"),
            _sums(general_forms(m), both.replace("{side}", "c"), "c"),
            _sums(general_forms(m), _DIFFERENCE, "d"),
        ]
    )
    frame = store.sql(
        f"SELECT g, cell, count(*) AS tasks, sum(nb) AS nb, sum(nc) AS nc, {sums} "
        f"FROM ({joined}) GROUP BY g, cell ORDER BY g, cell"
    )
    found = {}
    for (g,), part in frame.group_by("g", maintain_order=True):
        found[str(g)] = Paired(
            int(part["tasks"].sum()),
            (int(part["nb"].sum()), int(part["nc"].sum())),
            *(_dense(part, general_forms(m), prefix) for prefix in ("b", "c", "d")),
        )
    return found
