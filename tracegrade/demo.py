"""A deterministic archive of nightly trace exports, with the faults real archives have.

One file per day, alternating JSONL and nested Parquet, from several agents and
domains. Halfway through, one agent is deployed as a new version that fails more of its
tasks (`DEPLOYED`), for `tracegrade compare` to find; about 1% exact re-exports of a trace (same id and content, sometimes in
a later file), a few re-submissions with changed content, a few late arrivals
(a trace in the file of the day after its `created_at`), about 1% records that
each break exactly one rule of docs/input-format.md, and one zero-byte file.
The same arguments always write the same bytes, so demos and tests can assert
exact counts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from transforms.synth.traces import synthetic_traces, to_json_records
from transforms.validate import RULES

__all__ = [
    "BAD_RULES",
    "DEMO_QUERIES",
    "DEPLOYED",
    "DEMO_START",
    "EMPTY_FILE_NAME",
    "expected_counts",
    "write_demo_archive",
]

DEMO_START = date(2026, 10, 1)
"""The day of the first file."""

EMPTY_FILE_NAME = "traces-broken-empty.jsonl"
"""The zero-byte file every archive holds."""

_BROKEN_LAST = ("wrong_type", "invalid_json")
BAD_RULES: tuple[str, ...] = (
    *(rule for rule in RULES if rule not in {*_BROKEN_LAST, "duplicate_id"}),
    *_BROKEN_LAST,
)
"""The record rules the archive breaks, each by some records, one rule per record: the
validator's rules but duplicate_id (which the archive breaks by repeating records), in the
order the archive has always dealt them out (the whole-record rules last)."""

DEPLOYED = ("support-02", "support-02-v2")
"""The agent deployed halfway through the archive, and its new version's id: from the middle
day on its runs are the new version's, and a quarter of the tasks the old one would have
solved fail with a tool error it does not recover from (`DEPLOY_FAILURES`)."""

DEPLOY_FAILURES = 0.25

_JSONL_ONLY = {"wrong_type", "invalid_json"}
_NEEDS_STEPS = {"unknown_step_type", "tool_without_name"}
_US_PER_DAY = 86_400_000_000


@dataclass(frozen=True)
class _Record:
    """One line or row to write: which base trace, where, and how it is altered."""

    row: int
    day: int
    rank: float
    rule: str | None = None
    variant: int = 0
    changed: bool = False


@dataclass(frozen=True)
class _Plan:
    base: pl.DataFrame
    records: list[_Record]
    late: int


def write_demo_archive(
    out_dir: Path,
    *,
    n_traces: int = 5000,
    days: int = 30,
    seed: int = 20261122,
    start: date = DEMO_START,
) -> list[Path]:
    """Write the archive into `out_dir` and return the written paths, sorted.

    Files are `traces-YYYY-MM-DD.jsonl` for even day offsets from `start` and
    `.parquet` for odd ones, plus `traces-broken-empty.jsonl`. Existing files
    of the same names are overwritten; other files are left alone.

    Args:
        out_dir: Folder to write into; created when missing.
        n_traces: Distinct traces before duplicates are added.
        days: Number of daily files.
        seed: Seed of the traces and of every fault.
        start: Day of the first file.
    """
    plan = _plan(n_traces, days, seed, start)
    out_dir.mkdir(parents=True, exist_ok=True)
    native = plan.base.to_dicts()
    paths = []
    for day in range(days):
        records = sorted((r for r in plan.records if r.day == day), key=lambda r: r.rank)
        rows = [_altered(native[r.row], r, parquet=day % 2 == 1) for r in records]
        name = f"traces-{(start + timedelta(days=day)).isoformat()}"
        if day % 2 == 1:
            path = out_dir / f"{name}.parquet"
            table = _frame(rows, plan.base.schema)
            pq.write_table(
                table.to_arrow(compat_level=pl.CompatLevel.oldest()), path, compression="zstd"
            )
        else:
            path = out_dir / f"{name}.jsonl"
            frame = _frame(rows, plan.base.schema)
            lines = [
                _json_line(obj, r) for obj, r in zip(to_json_records(frame), records, strict=True)
            ]
            path.write_bytes("".join(line + "\n" for line in lines).encode())
        paths.append(path)
    empty = out_dir / EMPTY_FILE_NAME
    empty.write_bytes(b"")
    return sorted([*paths, empty])


def expected_counts(
    n_traces: int = 5000, days: int = 30, seed: int = 20261122, start: date = DEMO_START
) -> dict[str, Any]:
    """What a correct reader finds in the archive `write_demo_archive` writes with these arguments.

    Keys: `files`, `empty_files`, `records` (lines and rows in all data files),
    `scored`, `quarantined`, `quarantined_by_rule` (the record rules plus
    `duplicate_id`), `exact_duplicates`, `changed_duplicates`, `late_arrivals`.
    """
    plan = _plan(n_traces, days, seed, start)
    by_rule = {rule: sum(r.rule == rule for r in plan.records) for rule in BAD_RULES}
    copies = len(plan.records) - n_traces
    changed = sum(r.changed for r in plan.records)
    by_rule["duplicate_id"] = copies
    quarantined = sum(by_rule.values())
    return {
        "files": days + 1,
        "empty_files": 1,
        "records": len(plan.records),
        "scored": len(plan.records) - quarantined,
        "quarantined": quarantined,
        "quarantined_by_rule": by_rule,
        "exact_duplicates": copies - changed,
        "changed_duplicates": changed,
        "late_arrivals": plan.late,
    }


def _plan(n: int, days: int, seed: int, start: date) -> _Plan:
    """Decide every record of the archive: base traces, copies, faults, and their files."""
    if n < 50 or days < 1:
        raise ValueError(f"need n_traces >= 50 and days >= 1; got n_traces={n}, days={days}")
    origin = datetime.combine(start, time(), UTC)
    base = _deployed(
        synthetic_traces(n, seed=seed, start=origin, days=days),
        origin + timedelta(days=days // 2),
        np.random.default_rng([seed, 2]),
    )
    rng = np.random.default_rng([seed, 1])
    created = base.select(pl.col("metadata").struct.field("created_at").dt.epoch("us")).to_series()
    day = ((created.to_numpy() - int(origin.timestamp()) * 1_000_000) // _US_PER_DAY).astype(int)
    if not np.bincount(day, minlength=days).all():
        raise ValueError(
            f"{n} traces leave some of the {days} daily files empty; use more traces or fewer days"
        )
    late = (rng.random(n) < 0.005) & (day < days - 1)
    day = day + late
    n_steps = base.select(pl.col("steps").list.len()).to_series().to_numpy()
    order = rng.permutation(n)
    jsonl, has_steps = day % 2 == 0, n_steps > 0
    used = np.zeros(n, dtype=bool)
    rules: dict[int, tuple[str, int]] = {}
    for turn in range(max(len(BAD_RULES), round(0.01 * n))):
        rule = BAD_RULES[turn % len(BAD_RULES)]
        ok = ~used & (jsonl | (rule not in _JSONL_ONLY)) & (has_steps | (rule not in _NEEDS_STEPS))
        candidates = order[ok[order]]
        if len(candidates):
            used[candidates[0]] = True
            rules[int(candidates[0])] = (rule, turn // len(BAD_RULES))
    rest = order[~used[order]]
    n_dup, n_changed = max(1, round(0.01 * n)), max(2, round(0.002 * n))
    dup, changed = np.sort(rest[:n_dup]), np.sort(rest[n_dup : n_dup + n_changed])
    records = [
        _Record(row, int(day[row]), float(row), *rules.get(row, (None, 0))) for row in range(n)
    ]
    shift = rng.integers(0, 3, len(dup))
    records += [
        _Record(row, min(int(day[row] + k), days - 1), float(rng.uniform(0, n)))
        for row, k in zip(dup.tolist(), shift.tolist(), strict=True)
    ]
    later = rng.integers(1, 4, len(changed))
    records += [
        _Record(row, min(int(day[row] + k), days - 1), float(n + i), changed=True)
        for i, (row, k) in enumerate(zip(changed.tolist(), later.tolist(), strict=True))
    ]
    return _Plan(base, records, int(late.sum()))


def _deployed(base: pl.DataFrame, at: datetime, rng: np.random.Generator) -> pl.DataFrame:
    """The traces with the `DEPLOYED` agent's runs from `at` on made by its new version, which
    fails `DEPLOY_FAILURES` of the tasks the old one succeeded at: its last tool call comes
    back with an error it does not recover from (a run without a tool call just fails)."""
    worse = rng.random(base.height) < DEPLOY_FAILURES
    rows = base.to_dicts()
    for row, fails in zip(rows, worse.tolist(), strict=True):
        metadata = row["metadata"]
        if metadata["agent_id"] != DEPLOYED[0] or metadata["created_at"] < at:
            continue
        metadata["agent_id"] = DEPLOYED[1]
        if fails and metadata["success"]:
            metadata["success"] = False
            calls = [step for step in row["steps"] if step["type"] == "tool_call"]
            if calls:
                tool = (calls[-1]["tool"] or {}).get("name") or "the tool"
                calls[-1]["output_summary"] = json.dumps({"error": f"{tool} timed out"})
    return _frame(rows, base.schema)


def _frame(rows: list[dict[str, Any]], schema: pl.Schema) -> pl.DataFrame:
    """The rows (`to_dicts()` of a frame of `schema`, altered) as a frame again: built by
    Arrow, four times as fast as Polars' own constructor from nested dicts, the same frame."""
    arrow = pl.DataFrame(schema=schema).to_arrow().schema
    frame = pl.from_arrow(pa.Table.from_pylist(rows, schema=arrow))
    assert isinstance(frame, pl.DataFrame)
    return frame


def _copied(value: Any) -> Any:
    """A copy of a row of `to_dicts()`: its dicts and lists new, its values (text, numbers,
    times, None) shared, as `copy.deepcopy` makes it, without deepcopy's bookkeeping."""
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value


def _altered(row: dict[str, Any], record: _Record, *, parquet: bool) -> dict[str, Any]:
    """The trace as written: a deep copy, broken by the record's rule or revised when changed."""
    out = _copied(row)
    v = record.variant
    if record.changed:
        confidence = out["outcome"]["confidence"]
        out["outcome"]["confidence"] = round(
            confidence - 0.1 if confidence > 0.5 else confidence + 0.1, 2
        )
        out["outcome"]["result_summary"] += " (revised after review)"
    match record.rule:
        case "missing_id":
            out["id"] = "" if v % 2 else None
        case "invalid_created_at":
            out["metadata"]["created_at"] = None
        case "missing_success":
            out["metadata"]["success"] = None
        case "invalid_confidence":
            options = [None, float("nan"), 1.5, -0.1] if parquet else [None, 1.5, -0.1]
            out["outcome"]["confidence"] = options[v % len(options)]
        case "missing_objective":
            out["task"]["objective"] = None
        case "unknown_step_type":
            out["steps"][v % len(out["steps"])]["type"] = "plan"
        case "tool_without_name":
            with_tool = [s for s in out["steps"] if s["tool"] is not None] or out["steps"]
            with_tool[0]["tool"] = {"name": None}
    return out


def _json_line(obj: dict[str, Any], record: _Record) -> str:
    """One JSONL line, with the faults only JSON can carry."""
    v = record.variant
    match record.rule:
        case "missing_id" if v % 3 == 2:
            del obj["id"]
        case "invalid_created_at":
            obj["metadata"]["created_at"] = ["yesterday", "2026-13-45T25:61:00Z", ""][v % 3]
        case "missing_success" if v % 2:
            del obj["metadata"]["success"]
        case "missing_objective" if v % 2:
            del obj["task"]["objective"]
        case "wrong_type":
            if v % 3 == 0:
                obj["metadata"]["success"] = str(obj["metadata"]["success"]).lower()
            elif v % 3 == 1:
                obj["outcome"]["confidence"] = str(obj["outcome"]["confidence"])
            else:
                obj["steps"] = "none"
    line = json.dumps(obj, sort_keys=True)
    if record.rule == "invalid_json":
        return line[: len(line) // 2] if v % 2 == 0 else "<html>502 Bad Gateway</html>"
    return line


DEMO_QUERIES = (
    (
        "Score quantiles and shareable rate per domain",
        "SELECT task_domain, count(*) AS traces, round(median(score), 3) AS median_score,\n"
        "       round(quantile_cont(score, 0.9), 3) AS p90, round(avg(shareable::INT), 3) AS shareable_rate\n"
        "FROM latest_scores GROUP BY task_domain ORDER BY traces DESC;",
    ),
    (
        "The ten most novel shareable traces",
        "SELECT trace_id, agent_id, task_domain, round(novelty, 3) AS novelty, round(score, 3) AS score\n"
        "FROM latest_scores WHERE shareable ORDER BY novelty DESC, trace_id LIMIT 10;",
    ),
    (
        "Why rows were quarantined",
        "SELECT rule, count(*) AS rows, any_value(reason) AS example\n"
        "FROM quarantine GROUP BY rule ORDER BY rows DESC;",
    ),
)
"""The SQL the demo prints to try on its database: (title, query)."""
