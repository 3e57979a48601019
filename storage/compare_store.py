"""Two selections of the stored traces counted into cells for `transforms.compare.stats`.

A selection is `run:N` (the traces run N read), `time:START..END` (created in that window,
either end open), or a SQL predicate over the stored traces (`traces`' columns but `steps`,
`run_seq` of the run that read the trace, `level` its newest confidence level). Each trace
is taken with its newest score, newest level and newest judge results; the metrics are the
value score and its factors, the level's aggregate and each level's share, the success label,
and each judge metric. Everything is counted in DuckDB: what comes back is at most
`MAX_CELLS` rows a side (docs/compare.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import duckdb
import numpy as np

from storage._compare_cells import MIN_PAIRS, ROWS, paired_cells, side_cells
from storage._compare_sql import BASELINE_CATALOG, metrics_of, rows_sql, selection_sql
from storage._names import sql_string
from storage._statements import Statements
from storage.duckdb_store import MEMORY_LIMIT
from storage.errors import InputError
from transforms.compare.stats import MAX_CELLS, Cells
from transforms.config.compare import COLUMN_NAME
from transforms.errors import TracegradeError
from transforms.words import NONE

__all__ = [
    "BREAKDOWNS",
    "MIN_GROUP",
    "MIN_PAIRS",
    "Group",
    "Selected",
    "compare_cells",
    "metrics_of",
    "selection_sql",
]


@dataclass(frozen=True)
class Selected:
    """What the comparison counted: metrics, how it paired, the cells."""

    metrics: list[str]
    pairing: str
    """How the traces were compared, in words."""
    baseline: Cells
    candidate: Cells
    pairs: Cells | None
    baseline_traces: int
    candidate_traces: int
    groups: list[Group] = field(default_factory=list)
    """By domain and by agent (`BREAKDOWNS`)."""


BREAKDOWNS = ("task_domain", "agent_id")
"""The columns each comparison is broken down by."""

MIN_GROUP = 30
"""Fewest traces a side a domain or agent needs to be compared on its own; smaller ones are
pooled into one group."""


@dataclass(frozen=True)
class Group:
    """One domain or agent (or the pool of the small ones) compared on its own."""

    column: str
    value: str
    baseline: Cells
    candidate: Cells
    pairs: Cells | None
    traces: tuple[int, int]


PART_TRACES = 1_250_000
"""Most stored traces joined at a time: the selected traces are read in as many parts (by a
hash of the trace id, applied to every table read) as keep the joins within the store's
memory (10,000,000 traces in one part ran out of its 256 MB)."""


def _parts(store: Statements, catalogs: tuple[str, ...]) -> int:
    stored = max(store.rows(f"SELECT count(*) FROM {c}score_rows")[0][0] for c in catalogs)
    return max(1, -(-stored // PART_TRACES))


def _select(
    store: Statements,
    rows_of: Callable[[str], str],
    parts: int,
    pair_by: list[str],
    selections: tuple[str, str],
    apart: bool,
) -> tuple[dict[str, int], int]:
    """Read the selected traces into `ROWS`, in `parts` parts (`rows_of`: the SQL of the
    traces whose id its condition holds); each side's count and how many trace ids are in
    both (`apart`: the baseline from a database of its own, where the same traces scored
    otherwise are a comparison, not a mistake).

    Raises:
        InputError: a selection that fails, selects nothing, or selects what the other does.
    """
    for column in pair_by:
        if not COLUMN_NAME.match(column):
            raise InputError(f"--pair-by column {column!r} is not a column name")
    named = dict.fromkeys([*pair_by, *BREAKDOWNS])
    keys = "".join(f', "{column}"' for column in named)
    try:
        for part in range(parts):
            rows = rows_of(f"hash({{key}}) % {parts} = {part}" if parts > 1 else "true")
            columns = f"SELECT side, trace_id{keys}, COLUMNS('^m[0-9]+$') FROM ({rows})"
            first = (
                f"CREATE OR REPLACE TEMP TABLE {ROWS} AS" if part == 0 else f"INSERT INTO {ROWS}"
            )
            store.execute(f"{first} {columns}")
    except duckdb.OutOfMemoryException as exc:
        raise TracegradeError(
            f"the comparison ran out of the store's memory ({MEMORY_LIMIT}) reading the "
            "selected traces: select fewer (a shorter window, one agent), or lower "
            "storage.compare_store.PART_TRACES (docs/compare.md)"
        ) from exc
    except duckdb.Error as exc:
        raise InputError(
            f"a selection failed: {_first_line(exc)} (the columns: docs/compare.md)"
        ) from None
    counts = dict(store.rows(f"SELECT side, count(*) FROM {ROWS} GROUP BY side"))
    for side, name, text in zip(("b", "c"), ("baseline", "candidate"), selections, strict=True):
        if not counts.get(side):
            raise InputError(f"the {name} selection {text!r} selects no stored trace")
    ids = "SELECT hash(trace_id) FROM " + ROWS + " WHERE side = '{side}'"
    b_ids, c_ids = ids.format(side="b"), ids.format(side="c")
    both = store.rows(f"SELECT count(*) FROM ({b_ids} INTERSECT {c_ids})")[0][0]
    if both == counts["b"] == counts["c"] and not apart:
        raise InputError(
            f"the baseline and the candidate select the same {both:,} traces; "
            "select two different populations"
        )
    return counts, both


def compare_cells(
    store: Statements,
    baseline: str,
    candidate: str,
    pair_by: list[str] | None,
    min_group: int = MIN_GROUP,
    baseline_db: str | None = None,
) -> Selected:
    """The cells of both selections, whole and by domain and agent (`BREAKDOWNS`, the groups
    under `min_group` traces a side pooled); paired by `pair_by` (columns) where the sides
    share at least `MIN_PAIRS` tasks holding half of each side's traces, two samples otherwise.

    `baseline_db`: a DuckDB file the baseline is selected from (else the store).

    Raises:
        InputError: a selection that fails, selects nothing, or selects what the other does;
            a baseline database that cannot be read.
    """
    catalogs: tuple[str, ...] = ("",)
    if baseline_db is not None:
        _attach(store, baseline_db)
        catalogs = ("", f"{BASELINE_CATALOG}.")
    metrics = metrics_of(store, catalogs)
    names = [name for name, _ in metrics]
    apart = baseline_db is not None
    chosen = selection_sql(baseline), selection_sql(candidate)

    def rows_of(part: str) -> str:
        return rows_sql(metrics, *chosen, apart, part)

    parts = _parts(store, catalogs)
    counts, both = _select(store, rows_of, parts, pair_by or [], (baseline, candidate), apart)
    where = "databases" if apart else "selections"
    overlap = f"; {both:,} trace ids are in both {where}" if both else ""
    try:
        whole = _compared(
            store, "'all'", pair_by, len(metrics), {"all": (counts["b"], counts["c"])}
        )
        pairing, cells = whole["all"]
        groups = [
            group
            for column in BREAKDOWNS
            for group in _groups(store, column, pair_by, len(metrics), min_group)
        ]
    finally:
        store.execute(f"DROP TABLE IF EXISTS {ROWS}")
        if apart:
            store.execute(f"DETACH {BASELINE_CATALOG}")
    traces = (counts["b"], counts["c"])
    return Selected(names, pairing + overlap, *cells, *traces, groups=groups)


def _attach(store: Statements, path: str) -> None:
    """Attach the baseline's own DuckDB file read-only as `BASELINE_CATALOG`."""
    try:
        store.execute(f"ATTACH {sql_string(path)} AS {BASELINE_CATALOG} (READ_ONLY)")
        store.rows(f"SELECT 1 FROM {BASELINE_CATALOG}.scores LIMIT 1")
    except duckdb.Error as exc:
        raise InputError(
            f"--baseline-db {path} cannot be read as a tracegrade DuckDB file ({_first_line(exc)})"
        ) from None


def _first_line(error: duckdb.Error) -> str:
    return str(error).strip().splitlines()[0]


def _empty(m: int) -> Cells:
    return Cells(*(np.zeros((MAX_CELLS, m)) for _ in range(3)))


def _compared(
    store: Statements,
    group: str,
    pair_by: list[str] | None,
    m: int,
    sizes: dict[str, tuple[int, int]],
) -> dict[str, tuple[str, tuple[Cells, Cells, Cells | None]]]:
    """How each group (the SQL expression `group`; `sizes`: its traces a side) was
    compared, and its cells (baseline, candidate, and the pairs' differences when paired):
    paired where the sides share at least `MIN_PAIRS` tasks holding half of each side's
    traces, two samples otherwise."""
    sides = side_cells(store, group, m)
    paired = paired_cells(store, group, pair_by, m) if pair_by else {}
    found: dict[str, tuple[str, tuple[Cells, Cells, Cells | None]]] = {}
    for name, (b, c) in sizes.items():
        tasks = paired.get(name)
        if (
            pair_by
            and tasks is not None
            and tasks.tasks >= MIN_PAIRS
            and (2 * tasks.traces[0] >= b and 2 * tasks.traces[1] >= c)
        ):
            left = (b - tasks.traces[0]) + (c - tasks.traces[1])
            pairing = (
                f"paired by {', '.join(pair_by)}: {tasks.tasks:,} tasks ({', '.join(pair_by)}) "
                f"ran on both sides, holding {tasks.traces[0]:,} of the baseline's {b:,} "
                f"traces and {tasks.traces[1]:,} of the candidate's {c:,}"
                + (
                    f"; the other {left:,} traces (tasks on one side only) are left out"
                    if left
                    else ""
                )
            )
            found[name] = (pairing, (tasks.baseline, tasks.candidate, tasks.pairs))
            continue
        shared = 0 if tasks is None else tasks.tasks
        pairing = (
            f"two samples: only {shared:,} tasks ({', '.join(pair_by)}) ran on both sides"
            if pair_by
            else "two samples"
        )
        cells = (sides.get((name, "b"), _empty(m)), sides.get((name, "c"), _empty(m)), None)
        found[name] = (pairing, cells)
    return found


def _groups(
    store: Statements, column: str, pair_by: list[str] | None, m: int, min_group: int
) -> list[Group]:
    """Each value of `column` with at least `min_group` traces a side, compared on its own,
    then the pool of the rest (when both its sides hold traces)."""
    value = f'coalesce("{column}"::VARCHAR, {sql_string(NONE)})'
    sizes = store.rows(
        f"SELECT {value} AS g, count(*) FILTER (side = 'b'), count(*) FILTER (side = 'c') "
        f"FROM {ROWS} GROUP BY g ORDER BY g"
    )
    large = {g: (b, c) for g, b, c in sizes if min(b, c) >= min_group}
    small = [(g, b, c) for g, b, c in sizes if min(b, c) < min_group]
    if len(large) + bool(small) < 2:
        return []  # one group is the whole
    chosen = dict(large)
    pooled = None
    if small and sum(b for _, b, _ in small) and sum(c for _, _, c in small):
        many = "group" if len(small) == 1 else "groups"
        pooled = f"(pooled: {len(small)} {many} under {min_group} traces a side)"
        chosen[pooled] = (sum(b for _, b, _ in small), sum(c for *_, c in small))
    kept = ", ".join(sql_string(g) for g in large) or "NULL"
    other = sql_string(pooled) if pooled else "NULL"
    group = f"CASE WHEN {value} IN ({kept}) THEN {value} ELSE {other} END"
    found = _compared(store, group, pair_by, m, chosen)
    return [Group(column, name, *cells, chosen[name]) for name, (_, cells) in found.items()]
