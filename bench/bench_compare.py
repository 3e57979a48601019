"""bench_compare: `tracegrade compare` on 1,000,000 and 10,000,000 stored traces, beside one
DuckDB GROUP BY over the same rows.

The databases are bench_report's (built with SQL alone, kept in bench/out/ and reused): 90
days of scores from 50 agents in six domains, every 20th trace scored twice, a level per
trace, success labels, judge results on two metrics for 1 % of the traces. The comparison is
the six weeks before a deploy against the six weeks after (`time:` selections; the traces
share no task, so two samples), every metric, by domain and by agent, with a gate of three
lines, as `tracegrade compare --json` prints it; then the nightly comparison, the last two
nights' runs (`run:89` against `run:90`, each about 1 % of the traces), which the comparison
reads alone (docs/compare.md). Up to 1,000,000 traces the six weeks are compared again on a
copy whose objectives are 1.7 KB (50,000 tasks at 1,000,000), paired by objective as the
comparison pairs by default: bench_report's objectives are empty. Each runs in a child
process, which reports its own peak RSS (VmHWM of /proc/self/status: a child's ru_maxrss
starts at the high-water mark of the process that spawned it, and this one has just run the
GROUP BY).

The baseline is what a user would type to get the two sides' means by hand: one GROUP BY of
the newest scores by side (or run) and agent, in the same DuckDB (a fresh read-only
connection), with no interval, no levels, no labels and no judge. Single runs; the machine is
printed beside every figure.

Run: .venv/bin/python bench/bench_compare.py [--sizes 1000000,10000000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import duckdb
from _common import (
    OUT_DIR,
    Check,
    add_common_args,
    begin,
    end,
    peak_rss_mib,
    print_table,
    save_result,
    short_machine,
)
from bench_report import synthetic_database, with_latest_rows

from storage.names import sql_string
from storage.store.latest_rows import rebuild

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEPLOY = "2026-02-15"
BASELINE = f"time:2026-01-01..{DEPLOY}"
CANDIDATE = f"time:{DEPLOY}.."
GATE = "success < -0.02, score < -0.02, level.ESCALATE > 0.03"

_NEWEST = (
    "scores JOIN (SELECT trace_id, max(run_seq) AS run_seq FROM scores GROUP BY trace_id) "
    "USING (trace_id, run_seq)"
)
"""Each trace's newest score, as a user would find it by hand."""

GROUP_BY = f"""
SELECT created_at >= TIMESTAMPTZ '{DEPLOY} 00:00:00+00' AS after, agent_id, count(*) AS traces,
       avg(score) AS score
FROM {_NEWEST}
GROUP BY ALL
"""
"""The two sides' mean score per agent by hand: the newest score of each trace, grouped."""

NIGHTS = ("run:89", "run:90")
"""The nightly comparison: the last two nights' runs (each about 1 % of the traces)."""

NIGHTS_GROUP_BY = f"""
SELECT run_seq, agent_id, count(*) AS traces, avg(score) AS score
FROM {_NEWEST}
WHERE run_seq IN (89, 90)
GROUP BY ALL
"""
"""The two nights' mean score per agent by hand, from the newest scores."""

CASES = (
    ("six weeks against six", BASELINE, CANDIDATE, GROUP_BY),
    ("two nights", *NIGHTS, NIGHTS_GROUP_BY),
)
"""(name, baseline, candidate, the GROUP BY by hand) of each comparison timed."""


LONG_OBJECTIVE = "Fix the failing test in the payment module and explain the change. " * 25
"""About 1.7 KB: the objectives of the variant below, which real agent tasks (an issue to fix,
a ticket to answer) are closer to than the empty objectives of bench_report's database."""

LONG_UP_TO = 1_000_000
"""Sizes up to which the comparison is also timed on objectives of 1.7 KB (a copy of the
database; at 10,000,000 the copy would take some GB)."""


def long_objectives_database(n: int) -> Path:
    """A copy of the database of `n` traces whose objectives are 1.7 KB, one of n / 20 tasks
    each (built once, reused): the pairing by objective then pairs texts of real length."""
    path = OUT_DIR / f"compare-long-{n}.duckdb"
    if path.exists():
        return with_latest_rows(path)
    partial = path.with_name(path.name + ".partial")
    shutil.copyfile(synthetic_database(n), partial)
    con = duckdb.connect(str(partial))
    try:
        con.execute(
            f"UPDATE trace_rows SET objective = 'Task ' || (hash(trace_id) % {n // 20}) "
            f"|| ': ' || {sql_string(LONG_OBJECTIVE)}"
        )
        rebuild(con)  # the comparison's table, with the objectives changed by SQL
        con.execute("CHECKPOINT")
    finally:
        con.close()
    partial.rename(path)
    return path


def _child(db: str, baseline: str, candidate: str) -> None:
    from tracegrade.cli.compare import comparison

    started = time.perf_counter()
    text, status = comparison(db, baseline, candidate, fail_on=GATE, as_json=True)
    found = json.loads(text)
    print(
        json.dumps(
            {
                "seconds": time.perf_counter() - started,
                "status": status,
                "traces": [found["baseline"]["traces"], found["candidate"]["traces"]],
                "groups": len(found["groups"]),
                "metrics": len(found["metrics"]),
                "peak_mib": peak_rss_mib(),
            }
        )
    )


def _compare(db: Path, baseline: str, candidate: str) -> tuple[dict[str, object], float]:
    """The comparison's figures (child process) and its peak RSS in MiB.

    Raises:
        RuntimeError: the comparison failed (its last line of stderr)."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(db), baseline, candidate],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        lines = done.stderr.strip().splitlines() or ["(no stderr)"]
        raise RuntimeError(f"exit {done.returncode}: {lines[-1]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return found, float(found.pop("peak_mib"))


def _group_by(db: Path, query: str) -> float:
    con = duckdb.connect(str(db), read_only=True)
    try:
        started = time.perf_counter()
        con.execute(query).fetchall()
        return time.perf_counter() - started
    finally:
        con.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,10000000", help="trace counts, comma-separated")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    add_common_args(parser)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return 0
    info, load = begin("bench_compare: tracegrade compare against one GROUP BY", args)
    machine = short_machine(info)
    rows = []
    runs = []
    for n in [int(size) for size in args.sizes.split(",")]:
        started = time.perf_counter()
        db = synthetic_database(n)
        print(f"{n:>12,} traces: database ready in {time.perf_counter() - started:.0f} s")
        runs += [(n, db, case) for case in CASES]
        if n <= LONG_UP_TO:
            long = long_objectives_database(n)
            name, baseline, candidate, query = CASES[0]
            runs.append((n, long, (f"{name}, objectives of 1.7 KB", baseline, candidate, query)))
    for n, db, (name, baseline, candidate, query) in runs:
        by_hand = _group_by(db, query)
        try:
            found, peak = _compare(db, baseline, candidate)
        except RuntimeError as failed:
            print(f"{n:>12,} traces, {name}: the comparison FAILED ({failed})")
            rows.append({"traces": n, "case": name, "failed": str(failed)})
            continue
        seconds = float(found["seconds"])  # type: ignore[arg-type]
        print(
            f"{n:>12,} traces, {name} ({baseline} against {candidate}): compare "
            f"{seconds:.2f} s ({found['metrics']} metrics, {found['groups']} groups, exit "
            f"{found['status']}, sides {found['traces']}), GROUP BY {by_hand:.2f} s, peak "
            f"RSS {peak:,.0f} MiB (single runs)"
        )
        print_table(
            [
                Check(
                    f"{n:,} traces, {name}: seconds",
                    f"{seconds:.2f}",
                    f"{by_hand:.2f} (GROUP BY)",
                    f"{seconds / by_hand:.1f}x",
                    "",
                    None,
                ),
                Check(
                    f"{n:,} traces, {name}: peak RSS (MiB)",
                    f"{peak:,.0f}",
                    "1,024 (a run's budget)",
                    f"{peak / 1024:.2f}x",
                    "ratio <= 1",
                    peak <= 1024,
                ),
            ],
            machine,
        )
        rows.append({"traces": n, "case": name, "compare_s": seconds, "group_by_s": by_hand,
                     "peak_mib": peak, **found})  # fmt: skip
    end(info, load)
    save_result("bench_compare", {"machine": info, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
