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

import re
from dataclasses import dataclass, field

import duckdb
import numpy as np

from storage._names import sql_string
from storage._statements import Statements
from storage.errors import InputError
from transforms.compare.stats import MAX_CELLS, SEED, Cells
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

MIN_PAIRS = 10
"""Fewest tasks both sides ran for the comparison to be paired."""

LEVELS = ("SILENT", "NOTIFY", "CONFIRM", "ESCALATE")

_SCORES = ("score", "complexity", "novelty", "tool_diversity", "outcome_confidence")

_RUN = re.compile(r"^run:(\d+)$")
_TIME = re.compile(r"^time:([^.]*)\.\.([^.]*)$")
_COLUMN = re.compile(r"^[A-Za-z_]\w*$")

_LEVELS_SQL = (
    "SELECT trace_id, c.level, c.aggregate FROM confidence_traces c JOIN "
    "(SELECT trace_id, arg_max(source, computed_at) AS source FROM confidence_traces "
    "GROUP BY trace_id) USING (trace_id, source)"
)


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


def metrics_of(store: Statements) -> list[tuple[str, str]]:
    """(name, SQL over the joined row) of every metric the database can give."""
    found = [(name, f"s.{name}") for name in _SCORES]
    found.append(("confidence", "lv.aggregate"))
    found += [(f"level.{level}", f"(lv.level = '{level}')::DOUBLE") for level in LEVELS]
    found.append(("success", "t.success::DOUBLE"))
    judged = store.rows(
        "SELECT DISTINCT metric FROM latest_judge_results WHERE score IS NOT NULL ORDER BY 1"
    )
    found += [(f"judge.{metric}", f"j.{_judge_column(metric)}") for (metric,) in judged]
    if store.rows("SELECT 1 FROM latest_judge_scores WHERE overall_score IS NOT NULL LIMIT 1"):
        found.append(("judge.overall", "jo.overall_score"))
    return found


def _judge_column(metric: str) -> str:
    return '"j_' + metric.replace('"', '""') + '"'


def _rows_sql(metrics: list[tuple[str, str]], baseline: str, candidate: str) -> str:
    """Each selected trace once a side: its side, columns, and the metrics as m0, m1, ..."""
    judged = [name[len("judge.") :] for name, _ in metrics if name.startswith("judge.")]
    pivot = ", ".join(
        f"max(score) FILTER (WHERE metric = {sql_string(m)}) AS {_judge_column(m)}"
        for m in judged
        if m != "overall"
    )
    judge = (
        f"LEFT JOIN (SELECT item_id AS trace_id, {pivot} FROM latest_judge_results "
        "GROUP BY item_id) j USING (trace_id)"
        if pivot
        else ""
    )
    overall = (
        "LEFT JOIN (SELECT item_id AS trace_id, overall_score FROM latest_judge_scores) jo "
        "USING (trace_id)"
        if any(name == "judge.overall" for name, _ in metrics)
        else ""
    )
    values = ", ".join(f"{expression} AS m{i}" for i, (_, expression) in enumerate(metrics))
    return f"""
WITH s AS (
    SELECT * FROM scores JOIN (SELECT trace_id, max(run_seq) AS run_seq FROM scores
    GROUP BY trace_id) USING (trace_id, run_seq)
), rows AS (
    SELECT t.* EXCLUDE (steps, run_id), r.run_seq, lv.level, {values}
    FROM s JOIN traces t USING (trace_id, content_hash)
    LEFT JOIN runs r ON r.run_id = t.run_id
    LEFT JOIN ({_LEVELS_SQL}) lv USING (trace_id)
    {judge} {overall}
)
SELECT 'b' AS side, * FROM rows WHERE {baseline}
UNION ALL
SELECT 'c' AS side, * FROM rows WHERE {candidate}
"""


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


_ROWS = "__compare_rows"
"""The selected traces (side, trace_id, the pairing and breakdown columns, the metrics)."""

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
    pairing: str
    baseline: Cells
    candidate: Cells
    pairs: Cells | None
    traces: tuple[int, int]


def _select(
    store: Statements, rows: str, pair_by: list[str], baseline: str, candidate: str
) -> tuple[dict[str, int], int]:
    """Read the selected traces into `_ROWS`; each side's count and how many are in both.

    Raises:
        InputError: a selection that fails, selects nothing, or selects what the other does.
    """
    for column in pair_by:
        if not _COLUMN.match(column):
            raise InputError(f"--pair-by column {column!r} is not a column name")
    named = dict.fromkeys([*pair_by, *BREAKDOWNS])
    keys = "".join(f', "{column}"' for column in named)
    columns = f"SELECT side, trace_id{keys}, COLUMNS('^m[0-9]+$') FROM ({rows})"
    try:
        store.execute(f"CREATE OR REPLACE TEMP TABLE {_ROWS} AS {columns}")
    except duckdb.Error as exc:
        message = str(exc).strip().splitlines()[0]
        raise InputError(f"a selection failed: {message} (the columns: docs/compare.md)") from None
    counts = dict(store.rows(f"SELECT side, count(*) FROM {_ROWS} GROUP BY side"))
    for side, name, text in (("b", "baseline", baseline), ("c", "candidate", candidate)):
        if not counts.get(side):
            raise InputError(f"the {name} selection {text!r} selects no stored trace")
    ids = "SELECT trace_id FROM " + _ROWS + " WHERE side = '{side}'"
    b_ids, c_ids = ids.format(side="b"), ids.format(side="c")
    both = store.rows(f"SELECT count(*) FROM ({b_ids} INTERSECT {c_ids})")[0][0]
    if both == counts["b"] == counts["c"]:
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
) -> Selected:
    """The cells of both selections, whole and by domain and agent (`BREAKDOWNS`, the groups
    under `min_group` traces a side pooled); paired by `pair_by` (columns) where the sides
    share at least `MIN_PAIRS` tasks holding half of each side's traces, two samples otherwise.

    Raises:
        InputError: a selection that fails, selects nothing, or selects what the other does.
    """
    metrics = metrics_of(store)
    names = [name for name, _ in metrics]
    rows = _rows_sql(metrics, selection_sql(baseline), selection_sql(candidate))
    counts, both = _select(store, rows, pair_by or [], baseline, candidate)
    overlap = f"; {both:,} traces are in both selections" if both else ""
    try:
        pairing, cells = _cells_of(store, pair_by, len(metrics), counts, "true")
        groups = [
            group
            for column in BREAKDOWNS
            for group in _groups(store, column, pair_by, len(metrics), min_group)
        ]
    finally:
        store.execute(f"DROP TABLE IF EXISTS {_ROWS}")
    traces = (counts["b"], counts["c"])
    return Selected(names, pairing + overlap, *cells, *traces, groups=groups)


def _cells_of(
    store: Statements, pair_by: list[str] | None, m: int, counts: dict[str, int], where: str
) -> tuple[str, tuple[Cells, Cells, Cells | None]]:
    """How the traces `where` selects were compared, and their cells (baseline, candidate,
    and the pairs' differences when paired)."""
    pairing = "two samples"
    if pair_by:
        pairing, paired = _paired(store, pair_by, m, counts, where)
        if paired is not None:
            return pairing, paired
    sides = [_side_cells(store, side, counts[side], m, where) for side in ("b", "c")]
    return pairing, (sides[0], sides[1], None)


def _groups(
    store: Statements, column: str, pair_by: list[str] | None, m: int, min_group: int
) -> list[Group]:
    """Each value of `column` with at least `min_group` traces a side, compared on its own,
    then the pool of the rest (when both its sides hold traces)."""
    value = f'coalesce("{column}"::VARCHAR, {sql_string(NONE)})'
    sizes = store.rows(
        f"SELECT {value} AS g, count(*) FILTER (side = 'b'), count(*) FILTER (side = 'c') "
        f"FROM {_ROWS} GROUP BY g ORDER BY g"
    )
    large = [(g, b, c) for g, b, c in sizes if min(b, c) >= min_group]
    small = [(g, b, c) for g, b, c in sizes if min(b, c) < min_group]
    if len(large) + bool(small) < 2:
        return []  # one group is the whole
    chosen = [(g, [g], b, c) for g, b, c in large]
    if small and sum(b for _, b, _ in small) and sum(c for _, _, c in small):
        many = "group" if len(small) == 1 else "groups"
        pooled = f"(pooled: {len(small)} {many} under {min_group} traces a side)"
        chosen.append(
            (
                pooled,
                [g for g, _, _ in small],
                sum(b for _, b, _ in small),
                sum(c for *_, c in small),
            )
        )
    found = []
    for name, values, b, c in chosen:
        where = f"{value} IN ({', '.join(sql_string(v) for v in values)})"
        pairing, cells = _cells_of(store, pair_by, m, {"b": b, "c": c}, where)
        found.append(Group(column, name, pairing, *cells, (b, c)))
    return found


def _side_cells(store: Statements, side: str, count: int, m: int, where: str) -> Cells:
    """One side's cells: a trace a cell, or `MAX_CELLS` random buckets of them."""
    cell = (
        "row_number() OVER (ORDER BY trace_id)"
        if count <= MAX_CELLS
        else f"hash(trace_id, {SEED}) % {MAX_CELLS}"
    )
    found = store.rows(
        f"SELECT cell, {_sums(m)} FROM (SELECT {cell} AS cell, * FROM {_ROWS} "
        f"WHERE side = '{side}' AND {where}) GROUP BY cell ORDER BY cell"
    )
    return _cells(found, m, offset=1)


def _paired(
    store: Statements, pair_by: list[str], m: int, counts: dict[str, int], where: str
) -> tuple[str, tuple[Cells, Cells, Cells | None] | None]:
    """How the sides pair by task (the `pair_by` columns), and the cells of the tasks both
    ran (baseline means, candidate means, differences; each side's mean over its traces of
    the task); None where too few tasks are shared."""
    keys = ", ".join(f'"{column}"' for column in pair_by)
    means = ", ".join(f"avg(m{i}) AS m{i}" for i in range(m))
    tasks = (
        f"SELECT side, {keys}, count(*) AS n, {means} FROM {_ROWS} WHERE {where} "
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
