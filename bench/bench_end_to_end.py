"""End to end: the command line against the hand-written script that loads the same rows.

Parts (--part, repeatable; default: large, small, nightly):

- large: `tracegrade score FILE... --db DB --no-embedder` on --files Parquet files of --n
  realistic traces each (bench/_realistic.py), timed from process start to exit, with the
  process's peak RSS (os.wait4). Beside it, in its own process, the baseline of issue 48:
  bench/hand_written.sql run by the duckdb CLI on the same files into another DuckDB file
  (the traces' content and the value scores stored, a CHECKPOINT), timed and measured the
  same way. The scores are compared exactly. With --files above 1, both run again on the
  first file alone, and tracegrade's rate at N files is printed against it.
- ducklake: the same pair on the first file into a DuckLake with a SQLite catalog each.
- small: a 12-trace file from the command line without the embedder, and with it once its
  texts are embedded (the second of two runs into the same database).
- nightly: 10,000 traces into a database that already holds --n, against 10,000 into an empty
  database, --repeat times each (interleaved), medians compared: one pair on a shared 2-core
  machine ranged from 1.2x to 1.65x.

The main process imports neither Polars nor DuckDB, so the children's peak RSS is their own
(on Linux a child starts at the high-water mark of the process that spawned it). Data files
are generated once into bench/out.

Run: .venv/bin/python bench/bench_end_to_end.py [--n 1000000] [--files 1] [--part large]
Issue 48's figures in one run: --files 10 --part large --part ducklake --part small --part nightly
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
from typing import Any

import _common
from _common import OUT_DIR, Check, add_common_args, begin, end, print_table, save_result

TRACEGRADE = str(Path(sys.executable).with_name("tracegrade"))
RSS_TARGET = {1: 1.0, 10: 1.5}
"""Peak RSS targets in GiB by number of 1M files (issue: end to end at the speed of DuckDB)."""

SCRIPT = Path(__file__).resolve().with_name("hand_written.sql")
"""The hand-written baseline: the traces' content and the value scores stored by one DuckDB
script (issue 48), run by the duckdb CLI."""

DUCKDB_CLI = str(Path(sys.executable).with_name("duckdb"))
"""The duckdb CLI of the pip package duckdb-cli, the same release as the library."""


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
    cpu = usage.ru_utime + usage.ru_stime
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss": usage.ru_maxrss * 1024, "stdout": stdout}


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

LAKE_SETUP = """
import json, sys
from storage.store._extensions import extension_file
from storage.store.locations import locate
print(json.dumps({
    'paths': [str(extension_file(name)) for name in ('ducklake', 'sqlite_scanner')],
    'data_path': locate(sys.argv[1]).default_data_path(),
}))
"""

COMPARE = """
import json, sys
import duckdb
from storage.store._extensions import load_extension
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
targets = (('tg', sys.argv[1]), ('ref', sys.argv[2]))
if any(target.startswith('ducklake:') for _, target in targets):
    load_extension(con, 'ducklake')
    load_extension(con, 'sqlite_scanner')
for alias, target in targets:
    con.execute(f"ATTACH '{target}' AS {alias} (READ_ONLY)")
found = con.execute('''
  SELECT count(*) FILTER (WHERE s.trace_id IS NULL OR r.trace_id IS NULL),
         count(*) FILTER (WHERE s.score IS DISTINCT FROM r.score),
         count(*) FILTER (WHERE s.complexity IS DISTINCT FROM r.complexity
           OR s.tool_diversity IS DISTINCT FROM r.tool_diversity
           OR s.outcome_confidence IS DISTINCT FROM r.outcome_confidence),
         max(abs(s.score - r.score)), count(*)
  FROM tg.latest_scores s FULL JOIN ref.scores r USING (trace_id)''').fetchone()
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


def score_command(files: list[Path], db: Path | str, *extra: str) -> list[str]:
    return [TRACEGRADE, "score", *map(str, files), "--db", str(db), *extra]


def script_command(files: list[Path], db: str, *before: str) -> list[str]:
    """The duckdb CLI running the hand-written script on `files` into `db` (a file, or
    :memory: with `before` attaching a DuckLake and using it)."""
    listed = "[" + ", ".join("'" + str(path).replace("'", "''") + "'" for path in files) + "]"
    setup = "; ".join([*before, f"SET VARIABLE traces = {listed}"])
    return [DUCKDB_CLI, db, "-bail", "-cmd", setup, "-f", str(SCRIPT)]


def lake_setup(catalog: Path) -> tuple[str, ...]:
    """What the script's -cmd runs first to write into a DuckLake with a SQLite catalog: the
    extensions loaded from their pip packages (as tracegrade loads them), the lake attached
    with its files where tracegrade keeps a new lake's (`Location.default_data_path`) and used."""
    target = f"ducklake:sqlite:{catalog}"
    found = child_python(LAKE_SETUP, target)
    ducklake, sqlite = found["paths"]
    return (
        f"LOAD '{ducklake}'",
        f"LOAD '{sqlite}'",
        f"ATTACH '{target}' AS lake (DATA_PATH '{found['data_path']}')",
        "USE lake",
    )


def both(
    files: list[Path], ours_db: str, script_db: str, before: tuple[str, ...] = ()
) -> dict[str, Any]:
    """tracegrade and the hand-written script on the same files, one after the other, each
    in its own process (wall time from start to exit, peak RSS), and their scores compared.
    Each starts after `os.sync()`: the gigabytes the run before it wrote are on disk, not
    being written back while it is timed."""
    os.sync()
    ours = run_with_rss(score_command(files, ours_db, "--no-embedder"))
    os.sync()
    script = run_with_rss(script_command(files, script_db if not before else ":memory:", *before))
    same = child_python(COMPARE, ours_db, script_db)
    return {"ours": ours, "script": script, "compare": same}


_STAGE_ROW = re.compile(r"^\| ([a-z][a-z ]+) \| ([0-9.]+) \|$", re.MULTILINE)


def stage_seconds(summary: str) -> dict[str, float]:
    """The stage timings of a run's summary (its "Timings (seconds)" table)."""
    table = summary.split("## Timings (seconds)", 1)[-1].split("\n\n", 2)[:2]
    return {name: float(value) for name, value in _STAGE_ROW.findall("\n\n".join(table))}


def _figures(pair: dict[str, Any], traces: int) -> dict[str, Any]:
    stages = stage_seconds(pair["ours"]["stdout"])
    ours_cpu = pair["ours"]["cpu_s"] / pair["ours"]["wall_s"]
    print(
        f"tracegrade on {traces:,} traces: "
        + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in stages.items())
        + f"; {ours_cpu:.2f} cores busy on average"
    )
    return {
        "traces": traces,
        "ours_s": pair["ours"]["wall_s"],
        "ours_cpu_s": pair["ours"]["cpu_s"],
        "ours_stages_s": stages,
        "script_s": pair["script"]["wall_s"],
        "script_cpu_s": pair["script"]["cpu_s"],
        "ours_peak_rss": pair["ours"]["peak_rss"],
        "script_peak_rss": pair["script"]["peak_rss"],
        "compare": pair["compare"],
    }


def part_large(args: argparse.Namespace, folder: Path) -> tuple[list[Check], dict[str, Any]]:
    """tracegrade on --files x --n traces into one DuckDB file against the hand-written script
    into another; with more than one file, both on the first file alone first (so the larger
    run's files are not being written back while it is timed)."""
    files = data_files(args.n, args.files, args.seed)
    total = args.n * args.files
    alone: list[Check] = []
    if args.files > 1:
        one = both(files[:1], str(folder / "one.duckdb"), str(folder / "one-script.duckdb"))
        alone = _pair_rows(
            f"{args.n:,} traces (the first file alone), one DuckDB file", one, args.n, 1.0
        )
        for name in ("one.duckdb", "one-script.duckdb"):  # about 1 GB a million traces
            (folder / name).unlink(missing_ok=True)
    pair = both(files, str(folder / "large.duckdb"), str(folder / "script.duckdb"))
    label = f"{total:,} traces ({args.files} file{'s' * (args.files > 1)}), one DuckDB file"
    rows = _pair_rows(label, pair, total, RSS_TARGET.get(args.files, 1.5)) + alone
    figures = {"all": _figures(pair, total)}
    if args.files > 1:
        rate, one_rate = total / pair["ours"]["wall_s"], args.n / one["ours"]["wall_s"]
        rows.append(
            Check(
                f"{label}: tracegrade's rate against the first file alone (traces/s)",
                f"{rate:,.0f}",
                f"{one_rate:,.0f}",
                f"{rate / one_rate:.2f}x",
                ">= 0.9x",
                rate / one_rate >= 0.9,
            )
        )
        figures["first_file"] = _figures(one, args.n)
    return rows, figures


def part_ducklake(args: argparse.Namespace, folder: Path) -> tuple[list[Check], dict[str, Any]]:
    """tracegrade on --n traces into a DuckLake with a SQLite catalog against the script into
    another such DuckLake."""
    files = data_files(args.n, 1, args.seed)
    ours, script = folder / "lake.sqlite", folder / "script-lake.sqlite"
    pair = both(files, f"ducklake:sqlite:{ours}", f"ducklake:sqlite:{script}", lake_setup(script))
    label = f"{args.n:,} traces, a DuckLake (SQLite catalog)"
    return _pair_rows(label, pair, args.n, 1.0), _figures(pair, args.n)


def _pair_rows(label: str, pair: dict[str, Any], traces: int, target: float) -> list[Check]:
    """Wall time, rate, peak RSS and the scores compared, tracegrade beside the script."""
    ours, script, same = pair["ours"], pair["script"], pair["compare"]
    ratio = ours["wall_s"] / script["wall_s"]
    return [
        Check(
            f"{label}: wall (s), tracegrade / hand-written script",
            f"{ours['wall_s']:.1f}",
            f"{script['wall_s']:.1f}",
            f"{ratio:.1f}x",
            "<= 2.0x",
            ratio <= 2.0,
        ),
        Check(
            f"{label}: throughput (traces/s)",
            f"{traces / ours['wall_s']:,.0f}",
            f"{traces / script['wall_s']:,.0f}",
            f"{script['wall_s'] / ours['wall_s']:.2f}x",
            "",
            None,
        ),
        Check(
            f"{label}: peak RSS",
            gib(ours["peak_rss"]),
            gib(script["peak_rss"]),
            f"{ours['peak_rss'] / script['peak_rss']:.2f}x",
            f"<= {target} GiB",
            ours["peak_rss"] <= target * 1024**3,
        ),
        Check(
            f"{label}: scores that differ from the script's",
            f"{same['score_differs']} of {same['rows']:,} (C, D, O: {same['parts_differ']})",
            "",
            "",
            "0",
            same["score_differs"] == 0 and same["unmatched"] == 0 and same["parts_differ"] == 0,
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


PARTS = {
    "large": part_large,
    "ducklake": part_ducklake,
    "small": part_small,
    "nightly": part_nightly,
}


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
    info, load = begin("End to end: the command line against the hand-written script", args)
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
