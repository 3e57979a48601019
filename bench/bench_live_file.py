"""Readers while a run writes one database file (issue 24, the one-file setup).

`tracegrade score FILE --db DB --no-embedder` on --n realistic traces (bench/_realistic.py, the
same file as bench_end_to_end.py) runs as a child process. Beside it a reader, in its own
process, asks `SELECT count(*) FROM latest_scores` every 0.2 s the way `tracegrade sql` does
(a read-only store that waits while the run holds the file), and records how long each answer
took and what it said. Printed, in one run:

- the run's wall time, and the same run with no reader beside it (the reader's cost);
- how often and how long the run held the file (the run's own summary line: the longest hold
  is the most a reader can wait);
- the reader's latency, p50 / p99 / max, and how many answers showed part of a run (any count
  other than 0 and n).

DuckLake (the issue's other setup, and the ratio of a run into it against one file) is not
built yet; this prints the one-file figures only.

Run: .venv/bin/python bench/bench_live_file.py [--n 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import OUT_DIR, Check, add_common_args, begin, end, print_table, save_result
from bench_end_to_end import data_files

TRACEGRADE = str(Path(sys.executable).with_name("tracegrade"))
HELD = re.compile(r"held the database file (\d+) times, the longest ([\d.]+) s, ([\d.]+) s in all")
LONGEST_HOLD_TARGET_S = 5.0

READER = """
import json, sys, time
from pathlib import Path
from storage.duckdb_store import DuckDBStore
db, stop = Path(sys.argv[1]), Path(sys.argv[2])
while not db.exists():
    time.sleep(0.01)
answers = []
while not stop.exists():
    started = time.perf_counter()
    with DuckDBStore(db, read_only=True) as store:
        count = store.sql("SELECT count(*) AS n FROM latest_scores")["n"][0]
    answers.append([time.perf_counter() - started, int(count)])
    time.sleep(0.2)
print(json.dumps(answers))
"""


def _score(data: Path, db: Path) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    started = time.perf_counter()
    done = subprocess.run(
        [TRACEGRADE, "score", str(data), "--db", str(db), "--no-embedder"],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - started, done.stdout


def _with_reader(data: Path, db: Path) -> tuple[float, str, list[list[float]]]:
    stop = db.with_suffix(".stop")
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(db), str(stop)],
        cwd=Path(__file__).resolve().parents[1],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # its "waiting for the file" lines
        text=True,
    )
    try:
        seconds, out = _score(data, db)
    finally:
        stop.touch()
    answers: list[list[float]] = json.loads(reader.communicate(timeout=600)[0])
    return seconds, out, answers


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    add_common_args(parser)
    args = parser.parse_args()
    info, load = begin("A reader beside a run on one database file", args)
    os.chdir(Path(__file__).resolve().parent)
    (data,) = data_files(args.n, 1, 0)
    scratch = Path(tempfile.mkdtemp(prefix="live_file_", dir=OUT_DIR))
    alone_s, _ = _score(data, scratch / "alone.duckdb")
    run_s, out, answers = _with_reader(data, scratch / "live.duckdb")
    held = HELD.search(out)
    assert held is not None, out[-2000:]
    holds, longest, in_all = int(held[1]), float(held[2]), float(held[3])
    latencies = [seconds for seconds, _ in answers]
    partial = sum(count not in (0, args.n) for _, count in answers)
    rows = [
        Check(
            f"{args.n:,} traces: run wall (s), with reader / alone",
            f"{run_s:.1f}",
            f"{alone_s:.1f}",
            f"{run_s / alone_s:.2f}x",
            "",
            None,
        ),
        Check(
            "longest hold of the file (s)",
            f"{longest:.2f}",
            "",
            "",
            f"<= {LONGEST_HOLD_TARGET_S:.0f} s",
            longest <= LONGEST_HOLD_TARGET_S,
        ),
        Check("file held: times / seconds in all", f"{holds} / {in_all:.1f}", "", "", "", None),
        Check(
            f"reader count(*) latency (s), p50 / p99 / max ({len(answers)} answers)",
            f"{statistics.median(latencies):.2f} / {_quantile(latencies, 0.99):.2f} / "
            f"{max(latencies):.2f}",
            "",
            "",
            "",
            None,
        ),
        Check("answers showing part of a run", str(partial), "", "", "0", partial == 0),
    ]
    print_table(rows)
    end(info, load)
    save_result(
        f"live_file_{args.n}",
        {
            "machine": info,
            "run_s": run_s,
            "alone_s": alone_s,
            "holds": holds,
            "longest_hold_s": longest,
            "held_s": in_all,
            "answers": answers,
        },
    )


if __name__ == "__main__":
    main()
