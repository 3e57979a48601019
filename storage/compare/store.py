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

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import duckdb

from storage.compare._cells import (
    CELL,
    MIN_PAIRS,
    ROWS,
    ROWS_ONCE,
    TRACE_CELL,
    WHOLE,
    Form,
    Paired,
    Side,
    empty_cells,
    paired_cells,
    pooled_sides,
    side_cells,
    stored_metric,
)
from storage.compare._sql import (
    BASELINE_CATALOG,
    candidates_sql,
    cell_forms,
    check_pair_by,
    early_tasks,
    metrics_of,
    rows_sql,
    selection_sql,
    task_select,
)
from storage.confidence.store import one_level_source
from storage.errors import InputError
from storage.names import sql_string
from storage.store.commit import keeps_latest_scores
from storage.store.duckdb_store import MEMORY_LIMIT
from storage.store.latest_rows import is_current
from storage.store.statements import Statements
from transforms.compare.stats import Cells
from transforms.errors import TracegradeError
from transforms.words import NONE

__all__ = [
    "MIN_PAIRS",
    "Selected",
    "compare_cells",
    "last_scoring_runs",
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


SELECTED = "__compare_selected"
"""The selected traces, each once, with whether each side selects it; `ROWS` is a view of it
with one row a side."""

_SIDES = (
    f"CREATE OR REPLACE TEMP VIEW {ROWS} AS "
    f"SELECT 'b' AS side, * EXCLUDE (__in_b, __in_c) FROM {SELECTED} WHERE __in_b "
    f"UNION ALL SELECT 'c' AS side, * EXCLUDE (__in_b, __in_c) FROM {SELECTED} WHERE __in_c"
)
"""`ROWS`: each selected trace once a side that selects it, a side at a time: a grouping of
many groups (the 409,600 cells of 50 agents) then holds one side's groups at a time, and kept
within the store's memory (2.1 s at 10,000,000 traces, against 4.1-5.2 s read once)."""

_SIDES_ONCE = (
    f"CREATE OR REPLACE TEMP VIEW {ROWS_ONCE} AS "
    f"SELECT CASE WHEN __in_b THEN 'b' ELSE 'c' END AS side, * EXCLUDE (__in_b, __in_c) "
    f"FROM {SELECTED} WHERE __in_b OR __in_c "
    f"UNION ALL SELECT 'c' AS side, * EXCLUDE (__in_b, __in_c) FROM {SELECTED} "
    "WHERE __in_b AND __in_c"
)
"""`ROWS_ONCE`: the rows of `ROWS` from one read of the table (and a second of the traces
both sides select, which the table's row groups' bounds skip where there are none): a grouping
of few groups (the domains' cells, the groups' squares) took a third less time so."""

_SELECTED_TWICE = f"SELECT count(*) FROM {SELECTED} WHERE __in_b AND __in_c"
_IN_BOTH = (
    f"SELECT count(*) FROM (SELECT trace_id FROM {SELECTED} WHERE __in_b "
    f"INTERSECT SELECT trace_id FROM {SELECTED} WHERE __in_c)"
)
"""How many traces both selections hold: of one database, or (`--baseline-db`) trace ids in
both databases."""

PART_TRACES = 10_000_000
"""Most stored traces joined at a time: more are read in as many parts (by a hash of the trace
id, applied to every table read). 10,000,000 traces are joined in one read within the store's
256 MB (the joins spill); in 8 parts of 1,250,000 the same read took twice as long, each part
reading every table again (docs/compare.md)."""


def _stored(store: Statements, catalogs: tuple[str, ...]) -> int:
    return max(store.rows(f"SELECT count(*) FROM {c}score_rows")[0][0] for c in catalogs)


def _parts(stored: int) -> int:
    return max(1, -(-stored // PART_TRACES))


CANDIDATES = "__compare_candidates"
"""The trace ids a narrowed read (`_narrowed`) keeps."""

NARROW_SHARE = 0.15
"""Selections that hold at most this share of the stored traces (counted by their stored
versions) are read alone: each table read keeps only their trace ids, so a comparison of two
nights of a large database costs about what the two nights hold (docs/compare.md)."""

_UNSTABLE = (
    "SELECT DISTINCT function_name FROM duckdb_functions() "
    "WHERE stability IN ('VOLATILE', 'CONSISTENT_WITHIN_QUERY')"
)
"""Functions whose value may change from one statement to the next (random(), now()): a
selection calling one is evaluated once, by the whole read."""

_MOVING_KEYWORDS = (
    "current_date",
    "current_time",
    "current_timestamp",
    "localtime",
    "localtimestamp",
)
"""SQL's words for the time now, written without parentheses: moving like `now()`."""


def _narrowed(
    store: Statements,
    chosen: tuple[str, str],
    catalogs: tuple[str, ...],
    apart: bool,
    stored: int,
) -> str:
    """A condition on `{key}` (a trace id) that keeps the traces some stored version of which a
    selection holds (`CANDIDATES`), when they are at most `NARROW_SHARE` of `stored`; "true"
    (the whole read) otherwise, and for a selection on the level or one that fails (the whole
    read then says why) or that calls a function whose value may change between statements.
    `chosen`: the baseline's and the candidate's SQL; `catalogs`: the baseline's database
    last."""
    unstable = {str(name) for (name,) in store.rows(_UNSTABLE)} | set(_MOVING_KEYWORDS)
    words = {word.lower() for text in chosen for word in re.findall(r"[A-Za-z_]\w*", text)}
    if words & unstable:
        return "true"
    if apart:  # the baseline from its own database, the candidate from the store
        reads = [(catalogs[-1], chosen[0]), ("", chosen[1])]
    else:
        reads = [("", f"({chosen[0]}) OR ({chosen[1]})")]
    found = " UNION ALL ".join(candidates_sql(predicate, c) for c, predicate in reads)
    try:
        versions = store.rows(f"SELECT count(*) FROM ({found})")[0][0]
    except duckdb.Error:
        return "true"
    if versions > NARROW_SHARE * stored:
        return "true"
    store.execute(
        f"CREATE OR REPLACE TEMP TABLE {CANDIDATES} AS SELECT DISTINCT trace_id FROM ({found})"
    )
    return f"{{key}} IN (SELECT trace_id FROM {CANDIDATES})"


def _select(
    store: Statements,
    rows_of: Callable[[str], str],
    forms: Sequence[Form],
    parts: int,
    pair_by: list[str],
    selections: tuple[str, str],
    apart: bool,
    within: str = "true",
    tasks: str = "",
) -> tuple[dict[str, int], int]:
    """Read the selected traces into `ROWS`, in `parts` parts (`rows_of`: the SQL of the
    traces whose id its condition holds; `forms`: `cell_forms` of the metrics it gives, each
    kept as `stored_metric` says), of the traces `within` (a condition on `{key}`)
    keeps; each side's count and how many trace ids are in both (`apart`: the baseline from a
    database of its own, where the same traces scored otherwise are a comparison, not a
    mistake); `tasks`: the task columns the read takes of the trace rows (`early_tasks`;
    "": they are taken of each row read).

    Raises:
        InputError: a selection that fails, selects nothing, or selects what the other does.
    """
    check_pair_by(pair_by)
    keys = "".join(f', "{column}"' for column in BREAKDOWNS)
    if pair_by:
        keys += ", " + task_select(pair_by, tasks)
    # The trace id is kept only to count the ids two databases share; the cells need only
    # the cell it falls in, computed here once rather than by each grouping.
    ids = "trace_id, " if apart else ""
    metrics = ", ".join(stored_metric(i, form) for i, form in enumerate(forms))
    # Two databases are read one at a time (the other side's read pruned as always false):
    # as one union, the reads' joins ran out of the store's memory at 1,000,000 traces.
    reads = ("__in_b", "__in_c") if apart else ("true",)
    try:
        for n, (part, read) in enumerate(itertools.product(range(parts), reads)):
            kept = [f"hash({{key}}) % {parts} = {part}"] if parts > 1 else []
            kept += [within] if within != "true" else []
            rows = rows_of(" AND ".join(kept) or "true")
            columns = (
                f"SELECT {ids}{TRACE_CELL} AS {CELL}{keys}, {metrics}, __in_b, __in_c "
                f"FROM ({rows}) WHERE {read}"
            )
            first = (
                f"CREATE OR REPLACE TEMP TABLE {SELECTED} AS"
                if n == 0
                else f"INSERT INTO {SELECTED}"
            )
            store.execute(f"{first} {columns}")
        store.execute(_SIDES)
        store.execute(_SIDES_ONCE)
    except duckdb.OutOfMemoryException as exc:
        raise TracegradeError(
            f"the comparison ran out of the store's memory ({MEMORY_LIMIT}) reading the "
            "selected traces: select fewer (a shorter window, one agent), or lower "
            "storage.compare.store.PART_TRACES (docs/compare.md)"
        ) from exc
    except duckdb.Error as exc:
        raise InputError(
            f"a selection failed: {_first_line(exc)} (the columns: docs/compare.md)"
        ) from None
    counts = dict(store.rows(f"SELECT side, count(*) FROM {ROWS_ONCE} GROUP BY side"))
    for side, name, text in zip(("b", "c"), ("baseline", "candidate"), selections, strict=True):
        if not counts.get(side):
            raise InputError(f"the {name} selection {text!r} selects no stored trace")
    both = store.rows(_IN_BOTH if apart else _SELECTED_TWICE)[0][0]
    if both == counts["b"] == counts["c"] and not apart:
        raise InputError(
            f"the baseline and the candidate select the same {both:,} traces; "
            "select two different populations"
        )
    return counts, both


def last_scoring_runs(store: Statements, run_id: str) -> list[tuple[str, int]]:
    """(run_id, run_seq) of the scoring run `run_id` and the one before it that stored
    traces, newest first (fewer when there are fewer)."""
    return [
        (str(found), int(seq))
        for found, seq in store.rows(
            "SELECT r.run_id, r.run_seq FROM runs r SEMI JOIN traces t USING (run_id) "
            "WHERE r.flow = 'score_traces' AND r.run_seq <= "
            "(SELECT run_seq FROM runs WHERE run_id = ?) ORDER BY r.run_seq DESC LIMIT 2",
            [run_id],
        )
    ]


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
    apart = baseline_db is not None
    # No statement here needs its rows in the order they were read (the cells are ordered
    # by name): kept, the selected traces' table took a fifth longer at 10,000,000 traces.
    store.execute("SET preserve_insertion_order = false")
    try:
        metrics = metrics_of(store, catalogs)
        chosen = selection_sql(baseline), selection_sql(candidate)
        # The baseline's database (the store's own unless --baseline-db), then the store.
        one_source = (one_level_source(store, catalogs[-1]), one_level_source(store, ""))
        kept = (
            keeps_latest_scores(store.rows, catalogs[-1]),
            keeps_latest_scores(store.rows, ""),
        )
        latest = (is_current(store.rows, catalogs[-1]), is_current(store.rows, ""))

        tasks = early_tasks(store, pair_by or [], catalogs)

        def rows_of(part: str) -> str:
            return rows_sql(metrics, *chosen, apart, part, one_source, kept, tasks, latest)

        stored = _stored(store, catalogs)
        within = _narrowed(store, chosen, catalogs, apart, stored)
        selections = (baseline, candidate)
        forms = cell_forms(metrics)
        counts, both = _select(
            store, rows_of, forms, _parts(stored), pair_by or [], selections, apart, within, tasks
        )
        m = len(metrics)
        sides = side_cells(store, BREAKDOWNS, forms)
        paired = paired_cells(store, "'all'", pair_by, m) if pair_by else {}
        pairing, cells = _compared(pair_by, m, {"all": sides[WHOLE]}, paired)["all"]
        shared = paired.get("all")
        # A group's shared tasks are some of the whole's: too few there, too few in any group.
        group_pairs = pair_by if shared is not None and shared.tasks >= MIN_PAIRS else None
        groups = [
            group
            for column in BREAKDOWNS
            for group in _groups(store, column, group_pairs, m, min_group, sides)
        ]
    finally:
        store.execute(f"DROP VIEW IF EXISTS {ROWS}")
        store.execute(f"DROP VIEW IF EXISTS {ROWS_ONCE}")
        store.execute(f"DROP TABLE IF EXISTS {SELECTED}")
        store.execute(f"DROP TABLE IF EXISTS {CANDIDATES}")
        store.execute("RESET preserve_insertion_order")
        if apart:
            store.execute(f"DETACH {BASELINE_CATALOG}")
    where = "databases" if apart else "selections"
    overlap = f"; {both:,} trace ids are in both {where}" if both else ""
    traces = (counts["b"], counts["c"])
    names = [name for name, _ in metrics]
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


def _sizes(group: dict[str, Side]) -> tuple[int, int]:
    """A group's traces a side."""
    b, c = (group[side].traces if side in group else 0 for side in ("b", "c"))
    return b, c


def _compared(
    pair_by: list[str] | None,
    m: int,
    sides: dict[str, dict[str, Side]],
    paired: dict[str, Paired],
) -> dict[str, tuple[str, tuple[Cells, Cells, Cells | None]]]:
    """How each group (`sides`: its cells a side, by name) was compared, and its cells
    (baseline, candidate, and the pairs' differences when paired): paired where the sides
    share at least `MIN_PAIRS` tasks (`paired`) holding half of each side's traces, two
    samples otherwise."""
    found: dict[str, tuple[str, tuple[Cells, Cells, Cells | None]]] = {}
    for name, group in sides.items():
        b, c = _sizes(group)
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
        cells = tuple(group[side].cells if side in group else empty_cells(m) for side in ("b", "c"))
        found[name] = (pairing, (cells[0], cells[1], None))
    return found


def _groups(
    store: Statements,
    column: str,
    pair_by: list[str] | None,
    m: int,
    min_group: int,
    sides: dict[tuple[str, str], dict[str, Side]],
) -> list[Group]:
    """Each value of `column` with at least `min_group` traces a side, compared on its own,
    then the pool of the rest (when both its sides hold traces); `sides`: `side_cells`."""
    values = {value: group for (named, value), group in sorted(sides.items()) if named == column}
    large = {g: group for g, group in values.items() if min(_sizes(group)) >= min_group}
    small = [group for g, group in values.items() if g not in large]
    if len(large) + bool(small) < 2:
        return []  # one group is the whole
    chosen = dict(large)
    pooled = None
    if small and all(sum(_sizes(group)[i] for group in small) for i in (0, 1)):
        many = "group" if len(small) == 1 else "groups"
        pooled = f"(pooled: {len(small)} {many} under {min_group} traces a side)"
        chosen[pooled] = pooled_sides(small, m)
    paired: dict[str, Paired] = {}
    if pair_by:
        value = f'coalesce("{column}"::VARCHAR, {sql_string(NONE)})'
        kept = ", ".join(sql_string(g) for g in large) or "NULL"
        other = sql_string(pooled) if pooled else "NULL"
        group = f"CASE WHEN {value} IN ({kept}) THEN {value} ELSE {other} END"
        paired = paired_cells(store, group, pair_by, m)
    found = _compared(pair_by, m, chosen, paired)
    return [Group(column, name, *cells, _sizes(chosen[name])) for name, (_, cells) in found.items()]
