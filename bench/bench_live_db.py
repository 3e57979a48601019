"""Readers while a run writes: one database file against a DuckLake (issue 24).

`tracegrade score FILE --db DB --no-embedder` on --n realistic traces (bench/_realistic.py, the
same file as bench_end_to_end.py) runs as a child process, four times:

- into one file alone, and into a DuckLake with a SQLite catalog alone: the ratio of the two
  walls (target <= 1.3);
- into one file with a reader beside it, in its own process, asking
  `SELECT count(*) FROM latest_scores` every 0.2 s the way `tracegrade sql` does (a read-only
  store that waits while the run holds the file); the run's own summary line says how often
  and how long it held the file (target: the longest hold <= 5 s);
- into a DuckLake with a plain DuckDB session beside it, attached read-only for the whole run,
  asking the same every 0.2 s.

For each reader: latency p50 / p99 / max, errors, and answers that showed part of a run (any
count other than 0 and n).

With --refusals it measures instead what a reader that does not wait meets on one file (issue
47): plain DuckDB, `duckdb.connect(db, read_only=True)` every 0.2 s, refused while the run holds
the file: the share of refused tries and the longest refusal (from the first refused try to
the next answer; target <= 5 s), on a quiet machine and beside a second job (a process that
keeps one core busy).

Run: .venv/bin/python bench/bench_live_db.py [--n 1000000] [--refusals]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
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
LAKE_RATIO_TARGET = 1.3

READER = """
import json, sys, time
from pathlib import Path
from storage.store.duckdb_store import DuckDBStore
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

LAKE_READER = """
import json, sys, time
from pathlib import Path
import duckdb
from storage.store._extensions import extension_file
from storage.store.duckdb_store import DuckDBStore
catalog, stop = Path(sys.argv[1]), Path(sys.argv[2])
DuckDBStore(f"ducklake:sqlite:{catalog}").close()  # the lake exists before the analyst
con = duckdb.connect()  # the analyst's session: plain DuckDB, open for the whole run
for name in ("ducklake", "sqlite_scanner"):
    con.execute(f"LOAD '{extension_file(name)}'")
con.execute(f"ATTACH 'ducklake:sqlite:{catalog}' AS tg (READ_ONLY)")
print("attached", flush=True)
answers = []
while not stop.exists():
    started = time.perf_counter()
    try:
        count = con.execute("SELECT count(*) FROM tg.latest_scores").fetchone()[0]
    except duckdb.Error:
        count = -1
    answers.append([time.perf_counter() - started, int(count)])
    time.sleep(0.2)
print(json.dumps(answers))
"""


PLAIN_READER = """
import json, sys, time
from pathlib import Path
import duckdb
db, stop = Path(sys.argv[1]), Path(sys.argv[2])
while not db.exists():
    time.sleep(0.01)
tries = []
while not stop.exists():
    started = time.time()
    try:
        con = duckdb.connect(str(db), read_only=True)
        try:
            con.execute("SELECT count(*) FROM latest_scores").fetchone()
        finally:
            con.close()
        tries.append([started, 1])
    except duckdb.Error:
        tries.append([started, 0])
    time.sleep(0.2)
print(json.dumps(tries))
"""
"""A reader that does not wait: plain DuckDB, refused while the run holds the file."""
REFUSAL_TARGET_S = 5.0
BUSY = "while True: pass"


def _refusals(tries: list[list[float]]) -> tuple[float, float]:
    """The share of refused tries and the longest refusal: from a refused try after an answer
    (or the first try) to the next answer (or the last try)."""
    longest, since = 0.0, None
    for started, answered in tries:
        if not answered and since is None:
            since = started
        elif answered and since is not None:
            longest, since = max(longest, started - since), None
    if since is not None:
        longest = max(longest, tries[-1][0] - since)
    return sum(1 for _, answered in tries if not answered) / len(tries), longest


def _refusal_rows(data: Path, scratch: Path) -> list[Check]:
    rows = []
    for label, busy in (("quiet", False), ("beside a second job", True)):
        job = subprocess.Popen([sys.executable, "-c", BUSY]) if busy else None
        try:
            live = scratch / f"refused_{int(busy)}.duckdb"
            seconds, _, tries = _with_reader(data, str(live), PLAIN_READER, live)
        finally:
            if job is not None:
                job.kill()
                job.wait()
        share, longest = _refusals(tries)
        rows += [
            Check(
                f"plain reader, {label}: longest refusal (s), run {seconds:.1f} s",
                f"{longest:.2f}",
                "",
                "",
                f"<= {REFUSAL_TARGET_S:.0f} s",
                longest <= REFUSAL_TARGET_S,
            ),
            Check(
                f"plain reader, {label}: refused / tries",
                f"{share:.0%} of {len(tries)}",
                "",
                "",
                "",
                None,
            ),
        ]
    return rows


def _score(data: Path, db: str) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    started = time.perf_counter()
    done = subprocess.run(
        [TRACEGRADE, "score", str(data), "--db", db, "--no-embedder"],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - started, done.stdout


def _with_reader(
    data: Path, db: str, reader_code: str, watched: Path
) -> tuple[float, str, list[list[float]]]:
    stop = watched.with_suffix(".stop")
    reader = subprocess.Popen(
        [sys.executable, "-c", reader_code, str(watched), str(stop)],
        cwd=Path(__file__).resolve().parents[1],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # its "waiting for the file" lines
        text=True,
    )
    assert reader.stdout is not None
    if reader_code is LAKE_READER:
        assert reader.stdout.readline().strip() == "attached"
    try:
        seconds, out = _score(data, db)
    finally:
        stop.touch()
    answers: list[list[float]] = json.loads(reader.communicate(timeout=600)[0])
    return seconds, out, answers


def _reader_rows(name: str, answers: list[list[float]], n: int) -> list[Check]:
    latencies = [seconds for seconds, _ in answers]
    errors = sum(count < 0 for _, count in answers)
    partial = sum(count not in (0, n, -1) for _, count in answers)
    return [
        Check(
            f"{name}: count(*) latency (s), p50 / p99 / max ({len(answers)} answers)",
            f"{statistics.median(latencies):.2f} / {_quantile(latencies, 0.99):.2f} / "
            f"{max(latencies):.2f}",
            "",
            "",
            "",
            None,
        ),
        Check(
            f"{name}: errors / answers showing part of a run",
            f"{errors} / {partial}",
            "",
            "",
            "0 / 0",
            errors == 0 and partial == 0,
        ),
    ]


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _rows(
    n: int,
    file_s: float,
    lake_s: float,
    run_s: float,
    lake_run_s: float,
    out: str,
    readers: tuple[list[list[float]], list[list[float]]],
) -> tuple[list[Check], int, float, float]:
    """The printed figures, and the file's holds (times, longest, seconds in all)."""
    held = HELD.search(out)
    assert held is not None, out[-2000:]
    holds, longest, in_all = int(held[1]), float(held[2]), float(held[3])
    answers, lake_answers = readers
    rows = [
        Check(
            f"{n:,} traces: wall (s), DuckLake (SQLite catalog) / one file",
            f"{lake_s:.1f}",
            f"{file_s:.1f}",
            f"{lake_s / file_s:.2f}x",
            f"<= {LAKE_RATIO_TARGET}x",
            lake_s / file_s <= LAKE_RATIO_TARGET,
        ),
        Check(
            "one file: wall (s) with a reader / alone",
            f"{run_s:.1f}",
            f"{file_s:.1f}",
            f"{run_s / file_s:.2f}x",
            "",
            None,
        ),
        Check(
            "one file: longest hold of the file (s)",
            f"{longest:.2f}",
            "",
            "",
            f"<= {LONGEST_HOLD_TARGET_S:.0f} s",
            longest <= LONGEST_HOLD_TARGET_S,
        ),
        Check("one file: held times / seconds in all", f"{holds} / {in_all:.1f}", "", "", "", None),
        *_reader_rows("one file, tracegrade sql's way", answers, n),
        Check(
            "DuckLake: wall (s) with a reader / alone",
            f"{lake_run_s:.1f}",
            f"{lake_s:.1f}",
            f"{lake_run_s / lake_s:.2f}x",
            "",
            None,
        ),
        *_reader_rows("DuckLake, plain DuckDB session", lake_answers, n),
    ]
    return rows, holds, longest, in_all


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    add_common_args(parser)
    parser.add_argument(
        "--refusals", action="store_true", help="only a plain reader's refusals on one file"
    )
    args = parser.parse_args()
    info, load = begin("Readers beside a run: one file and a DuckLake", args)
    os.chdir(Path(__file__).resolve().parent)
    (data,) = data_files(args.n, 1, 0)
    scratch = Path(tempfile.mkdtemp(prefix="live_db_", dir=OUT_DIR))
    if args.refusals:
        print_table(_refusal_rows(data, scratch))
        shutil.rmtree(scratch)
        end(info, load)
        return
    file_s, _ = _score(data, str(scratch / "alone.duckdb"))
    lake_s, _ = _score(data, f"ducklake:sqlite:{scratch / 'alone_lake' / 'meta.sqlite'}")
    live = scratch / "live.duckdb"
    run_s, out, answers = _with_reader(data, str(live), READER, live)
    catalog = scratch / "live_lake" / "meta.sqlite"
    lake_run_s, _, lake_answers = _with_reader(
        data, f"ducklake:sqlite:{catalog}", LAKE_READER, catalog
    )
    rows, holds, longest, in_all = _rows(
        args.n, file_s, lake_s, run_s, lake_run_s, out, (answers, lake_answers)
    )
    print_table(rows)
    shutil.rmtree(scratch)  # four databases of --n traces (about 2 GB each at 1,000,000)
    end(info, load)
    save_result(
        f"live_db_{args.n}",
        {
            "machine": info,
            "file_s": file_s,
            "lake_s": lake_s,
            "file_with_reader_s": run_s,
            "lake_with_reader_s": lake_run_s,
            "holds": holds,
            "longest_hold_s": longest,
            "held_s": in_all,
            "file_answers": answers,
            "lake_answers": lake_answers,
        },
    )


if __name__ == "__main__":
    main()
