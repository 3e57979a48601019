"""End to end: the command line against one DuckDB query over the same Parquet file.

Parts (--part, repeatable; default: large, small, nightly):

- large: `tracegrade score FILE... --db DB --no-embedder` on --files Parquet files of --n
  realistic traces each (bench/_realistic.py), timed from process start to exit, with the
  process's peak RSS (os.wait4). Beside it, in its own process, one DuckDB query that computes
  the same value scores from the same files (REFERENCE_SQL), and the same query plus copying
  the traces' content into a table, which tracegrade also stores. The scores are compared
  exactly.
- small: a 12-trace file from the command line without the embedder, and with it once its
  texts are embedded (the second of two runs into the same database).
- nightly: 10,000 traces into a database that already holds --n, against 10,000 into an empty
  database, --repeat times each (interleaved), medians compared: one pair on a shared 2-core
  machine ranged from 1.2x to 1.65x.

The main process imports neither Polars nor DuckDB, so the children's peak RSS is their own
(on Linux a child starts at the high-water mark of the process that spawned it). Data files
are generated once into bench/out.

Run: .venv/bin/python bench/bench_end_to_end.py [--n 1000000] [--files 1] [--part large]
(With --files above 1, `large` also runs the CLI on the first file alone: the rate at N files
is printed against it.)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common
from _common import OUT_DIR, Check, add_common_args, begin, end, print_table, save_result

TRACEGRADE = str(Path(sys.executable).with_name("tracegrade"))
RSS_TARGET = {1: 1.0, 10: 1.5}
"""Peak RSS targets in GiB by number of 1M files (issue: end to end at the speed of DuckDB)."""

REFERENCE_SQL = """
CREATE TABLE ref AS
WITH t AS (
  SELECT id AS trace_id, metadata.task_domain AS task_domain, metadata.success AS success,
    outcome.confidence AS confidence, len(steps)::DOUBLE AS n,
    len(list_distinct(list_transform(steps, lambda s: s.type)))::DOUBLE AS unique_types,
    len(list_filter(steps, lambda s: s.type = 'error_recovery'))::DOUBLE AS recoveries,
    len(list_distinct(list_transform(list_filter(steps, lambda s: s.tool IS NOT NULL),
        lambda s: s.tool.name)))::DOUBLE AS unique_tools,
    len(list_filter(steps, lambda s: s.tool IS NOT NULL)) > 0 AS has_tool,
    coalesce(len(steps) = 1 AND steps[1].type = 'thought', false) AS single_thought
  FROM read_parquet({files}, union_by_name = true)
), f AS (
  SELECT *,
    least(1.0, (unique_types / 4.0) * 0.5 + (CASE WHEN recoveries > 0 THEN 0.3 ELSE 0.0 END)
      + (n / 20.0) * 0.2) AS c,
    least(1.0, (unique_tools / greatest(1.0, n)) * 3.0) AS d,
    confidence * (CASE WHEN success THEN 1.0 ELSE 0.3 END) AS o,
    {weights} AS w
  FROM t
), s AS (
  SELECT *, CASE WHEN single_thought THEN 0.1
    ELSE c * w[1] + 0.5 * w[2] + d * w[3] + o * w[4] END AS r1
  FROM f
), r AS (
  SELECT *, CASE WHEN recoveries > 2 AND success THEN least(1.0, r1 + 0.1) ELSE r1 END AS r2
  FROM s
)
SELECT trace_id, c AS complexity, d AS tool_diversity, o AS outcome_confidence,
  CASE WHEN unique_tools <= 1 AND has_tool THEN greatest(0.0, r2 - 0.1) ELSE r2 END AS score
FROM r
"""
"""The value score without the embedder (N = 0.5) in one statement: C, D, O, the domain
profile's weights (filled in from the built-in profiles), the overrides (docs/scoring.md)."""


def run_with_rss(command: list[str]) -> dict[str, Any]:
    """Run `command` (no Prefect API); its wall time from start to exit, its stdout, and its
    own peak RSS in bytes (the child is reaped with os.wait4, whose usage is the child's)."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    # Output goes to files, not pipes: reading one pipe to its end while the child fills the
    # other would stall both.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if process.returncode != 0:
        print(stdout[-3000:], stderr[-3000:], sep="\n", file=sys.stderr)
        shown = " ".join(part if len(part) < 80 else part[:60] + "..." for part in command[:4])
        raise SystemExit(f"{shown} failed with exit code {process.returncode}")
    return {"wall_s": wall, "peak_rss": usage.ru_maxrss * 1024, "stdout": stdout}


def child_python(code: str, *args: str) -> dict[str, Any]:
    """Run `code` in a fresh interpreter from bench/; it prints one JSON line, returned."""
    done = run_with_rss([sys.executable, "-c", code, *args])
    return {**json.loads(done["stdout"].strip().splitlines()[-1]), **done}


GENERATE = """
import sys
from pathlib import Path
from _realistic import write_realistic_parquet
path, n, seed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
partial = path.with_suffix('.partial')
write_realistic_parquet(partial, n, seed=seed)
partial.rename(path)
print('{}')
"""

REFERENCE = """
import json, sys, time
import duckdb
from transforms.config.scoring import ScoringConfig
db, files, sql, copy = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4] == '1'
listed = '[' + ', '.join("'" + name + "'" for name in files) + ']'
profiles = ScoringConfig().all_profiles()
default = profiles.pop('default')
cases = ' '.join(f"WHEN '{k}' THEN {list(v.as_tuple())}" for k, v in profiles.items())
weights = f"CASE task_domain {cases} ELSE {list(default.as_tuple())} END"
con = duckdb.connect(db)
con.execute("SET TimeZone = 'UTC'")
started = time.perf_counter()
con.execute(sql.format(files=listed, weights=weights))
if copy:
    con.execute(f"CREATE TABLE content AS SELECT * FROM read_parquet({listed}, union_by_name = true)")
seconds = time.perf_counter() - started
rows = con.execute('SELECT count(*) FROM ref').fetchone()[0]
con.close()
print(json.dumps({'seconds': seconds, 'rows': rows}))
"""

COMPARE = """
import json, sys
import duckdb
con = duckdb.connect()
con.execute(f"ATTACH '{sys.argv[1]}' AS tg (READ_ONLY)")
con.execute(f"ATTACH '{sys.argv[2]}' AS ref (READ_ONLY)")
found = con.execute('''
  SELECT count(*) FILTER (WHERE s.trace_id IS NULL OR r.trace_id IS NULL),
         count(*) FILTER (WHERE s.score IS DISTINCT FROM r.score),
         count(*) FILTER (WHERE s.complexity IS DISTINCT FROM r.complexity
           OR s.tool_diversity IS DISTINCT FROM r.tool_diversity
           OR s.outcome_confidence IS DISTINCT FROM r.outcome_confidence),
         max(abs(s.score - r.score)), count(*)
  FROM tg.latest_scores s FULL JOIN ref.ref r USING (trace_id)''').fetchone()
con.close()
print(json.dumps(dict(zip(['unmatched', 'score_differs', 'parts_differ', 'max_abs', 'rows'], found))))
"""


def data_files(n: int, count: int, seed: int) -> list[Path]:
    """`count` Parquet files of `n` realistic traces (seeds seed, seed+1, ...), made once."""
    paths = []
    for index in range(count):
        path = OUT_DIR / f"realistic_{n}_seed{seed + index}.parquet"
        if not path.exists():
            OUT_DIR.mkdir(parents=True, exist_ok=True)
            started = time.perf_counter()
            child_python(GENERATE, str(path), str(n), str(seed + index))
            print(f"data: generated {path.name} in {time.perf_counter() - started:.0f} s")
        paths.append(path)
    return paths


def gib(value: float) -> str:
    return f"{value / 1024**3:.2f} GiB"


def score_command(files: list[Path], db: Path, *extra: str) -> list[str]:
    return [TRACEGRADE, "score", *map(str, files), "--db", str(db), *extra]


def part_large(args: argparse.Namespace, folder: Path) -> tuple[list[Check], dict[str, Any]]:
    """The CLI on --files x --n traces against the reference query, its peak RSS, exactness."""
    files = data_files(args.n, args.files, args.seed)
    total = args.n * args.files
    db = folder / "large.duckdb"
    ours = run_with_rss(score_command(files, db, "--no-embedder"))
    names = json.dumps([str(path) for path in files])
    query = child_python(REFERENCE, str(folder / "ref.duckdb"), names, REFERENCE_SQL, "0")
    stored = child_python(REFERENCE, str(folder / "ref2.duckdb"), names, REFERENCE_SQL, "1")
    same = child_python(COMPARE, str(db), str(folder / "ref.duckdb"))
    one = None
    if args.files > 1:
        # The rate of the first file alone, for the rate at N files against it (same run).
        one = run_with_rss(score_command(files[:1], folder / "one.duckdb", "--no-embedder"))
        (folder / "one.duckdb").unlink(missing_ok=True)  # 1 GB a million traces
    figures = {
        "ours_s": ours["wall_s"],
        "query_s": query["seconds"],
        "stored_s": stored["seconds"],
        "peak_rss": ours["peak_rss"],
        "compare": same,
        "traces": total,
        "one_file_s": None if one is None else one["wall_s"],
        "one_file_peak_rss": None if one is None else one["peak_rss"],
    }
    return _large_rows(args, ours, query, stored, same, one), figures


def _large_rows(
    args: argparse.Namespace,
    ours: dict[str, Any],
    query: dict[str, Any],
    stored: dict[str, Any],
    same: dict[str, Any],
    one: dict[str, Any] | None,
) -> list[Check]:
    total = args.n * args.files
    target = RSS_TARGET.get(args.files, 1.5)
    label = f"{total:,} traces ({args.files} file{'s' * (args.files > 1)})"
    return [
        Check(
            f"{label}: wall (s), CLI / one query",
            f"{ours['wall_s']:.1f}",
            f"{query['seconds']:.1f}",
            f"{ours['wall_s'] / query['seconds']:.1f}x",
            "<= 2.0x",
            ours["wall_s"] / query["seconds"] <= 2.0,
        ),
        Check(
            f"{label}: wall (s), CLI / query + storing the content",
            f"{ours['wall_s']:.1f}",
            f"{stored['seconds']:.1f}",
            f"{ours['wall_s'] / stored['seconds']:.1f}x",
            "",
            None,
        ),
        Check(
            f"{label}: throughput (traces/s)",
            f"{total / ours['wall_s']:,.0f}",
            f"{total / query['seconds']:,.0f}",
            "",
            "",
            None,
        ),
        Check(
            f"{label}: peak RSS",
            gib(ours["peak_rss"]),
            "",
            "",
            f"<= {target} GiB",
            ours["peak_rss"] <= target * 1024**3,
        ),
        Check(
            f"{label}: scores that differ from the query's",
            f"{same['score_differs']} of {same['rows']:,} (C, D, O: {same['parts_differ']})",
            "",
            "",
            "0",
            same["score_differs"] == 0 and same["unmatched"] == 0 and same["parts_differ"] == 0,
        ),
        *([] if one is None else _scale_rows(args, ours, one, label)),
    ]


def _scale_rows(
    args: argparse.Namespace, ours: dict[str, Any], one: dict[str, Any], label: str
) -> list[Check]:
    """The rate at --files files against the first file alone, and that run's peak RSS."""
    rate, one_rate = args.n * args.files / ours["wall_s"], args.n / one["wall_s"]
    return [
        Check(
            f"{label}: throughput (traces/s) against the first file alone",
            f"{rate:,.0f}",
            f"{one_rate:,.0f}",
            f"{rate / one_rate:.2f}x",
            ">= 0.8x",
            rate / one_rate >= 0.8,
        ),
        Check(
            f"{args.n:,} traces (the first file alone): peak RSS",
            gib(one["peak_rss"]),
            "",
            "",
            "",
            None,
        ),
    ]


def part_small(args: argparse.Namespace, folder: Path) -> tuple[list[Check], dict[str, Any]]:
    """A 12-trace file from the command line, without and with the embedder (texts cached)."""
    small = folder / "small.parquet"
    child_python(GENERATE, str(small), "12", str(args.seed + 99))
    plain = [
        run_with_rss(score_command([small], folder / f"s{i}.duckdb", "--no-embedder"))
        for i in range(3)
    ]
    run_with_rss(score_command([small], folder / "e.duckdb"))
    embedded = [
        run_with_rss(score_command([small], folder / "e.duckdb", "--force")) for _ in range(3)
    ]
    best_plain = min(run["wall_s"] for run in plain)
    best_embedded = min(run["wall_s"] for run in embedded)
    rows = [
        Check(
            "12 traces, no embedder: wall (s, best of 3)",
            f"{best_plain:.2f}",
            "",
            "",
            "<= 2 s",
            best_plain <= 2.0,
        ),
        Check(
            "12 traces, embedder, texts embedded: wall (s, best of 3)",
            f"{best_embedded:.2f}",
            "",
            "",
            "<= 5 s",
            best_embedded <= 5.0,
        ),
    ]
    return rows, {"no_embedder_s": best_plain, "embedder_cached_s": best_embedded}


def part_nightly(args: argparse.Namespace, folder: Path) -> tuple[list[Check], dict[str, Any]]:
    """10,000 traces into a database holding --n traces, against 10,000 into an empty one,
    --repeat times each, interleaved; the medians are compared. Each run into the full
    database gets its own copy of it (written to disk before the clock starts: a copy still
    in the page cache would make the run's first checkpoint write it out)."""
    (held,) = data_files(args.n, 1, args.seed)
    (night,) = data_files(10_000, 1, args.seed + 50)
    full = folder / "full.duckdb"
    run_with_rss(score_command([held], full, "--no-embedder"))
    into_full: list[float] = []
    into_empty: list[float] = []
    for attempt in range(args.repeat):
        copy = folder / f"full-{attempt}.duckdb"
        shutil.copyfile(full, copy)
        os.sync()
        into_full.append(run_with_rss(score_command([night], copy, "--no-embedder"))["wall_s"])
        copy.unlink()
        empty = folder / f"empty-{attempt}.duckdb"
        into_empty.append(run_with_rss(score_command([night], empty, "--no-embedder"))["wall_s"])
    ratio = statistics.median(into_full) / statistics.median(into_empty)
    rows = [
        Check(
            f"nightly 10,000: into {args.n:,} / into empty (s, median of {args.repeat})",
            _common.median_spread(into_full),
            _common.median_spread(into_empty),
            f"{ratio:.2f}x",
            "<= 1.5x",
            ratio <= 1.5,
        ),
    ]
    return rows, {"into_full_s": into_full, "into_empty_s": into_empty, "ratio": ratio}


PARTS = {"large": part_large, "small": part_small, "nightly": part_nightly}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="traces per file (default 1M)")
    parser.add_argument("--files", type=int, default=1, help="files for `large` (10 for 10M)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--part", choices=sorted(PARTS), action="append")
    parser.add_argument(
        "--repeat", type=int, default=5, help="nightly: runs into each database (default 5)"
    )
    add_common_args(parser)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    info, load = begin("End to end: the command line against one DuckDB query", args)
    os.chdir(Path(__file__).resolve().parent)
    rows: list[Check] = []
    figures: dict[str, Any] = {"machine": info}
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="end_to_end_", dir=OUT_DIR))
    try:
        for name in args.part or ["large", "small", "nightly"]:
            found, figures[name] = PARTS[name](args, scratch)
            rows.extend(found)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print_table(rows)
    end(info, load)
    save_result(f"end_to_end_{args.n}x{args.files}", figures)


if __name__ == "__main__":
    main()
