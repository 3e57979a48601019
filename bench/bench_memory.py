"""Peak memory of scoring 1,000,000 traces without the embedder, through the real stages.

A child process opens a fresh DuckDB store (storage.store.registry.held_store), begins a run and
runs pipelines.staging.stage_inputs, plan_novelty(embed=False), score_staged(embed=False) and
commit_results on one Parquet file, as pipelines/score.py does without Prefect. The child also
reports its own peak after each stage, so the stage that sets the peak is visible.

Process layout, so that nothing but the stages counts: the data file is generated (once) in a
separate process; a small measuring process then starts the scoring child and reads
resource.getrusage(RUSAGE_CHILDREN).ru_maxrss after it exits. (On Linux a child's ru_maxrss
starts at the high-water mark of the process that spawned it, so the spawning process must be
small: this script's main process never imports polars.)

Run: .venv/bin/python bench/bench_memory.py [--n 1000000]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import (
    OUT_DIR,
    Check,
    add_common_args,
    begin,
    end,
    fmt_rate,
    print_table,
    save_result,
)

BUDGET_BYTES = 4 * 1024**3
"""The memory budget: 4 GB (read as 4 GiB, the stricter of the two is 4e9 bytes: both shown)."""
STAGES = ("stage_inputs", "plan_novelty", "score_staged", "commit_results")


def _peak_self_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def child(inputs: str, db: str) -> None:
    """Run the stages and print one JSON line with timings, counts and peaks per stage."""
    from importlib.metadata import version

    from pipelines.runs import Run
    from pipelines.stages import commit_results, plan_novelty, score_staged
    from pipelines.staging import stage_inputs
    from storage.store.registry import held_store
    from transforms.config.scoring import EmbeddingConfig, ScoringFile

    settings = ScoringFile(embedding=EmbeddingConfig(enabled=False))
    report: dict[str, Any] = {"stages": {}, "peak_after_imports": _peak_self_bytes()}
    with held_store(db) as store:
        handle = store.begin_run(
            "bench_memory",
            version=version("tracegrade"),
            model=None,
            config=settings.model_dump(mode="json"),
            config_hash=settings.config_hash,
        )
        work = Path(f"{store.path}.work") / handle.run_id
        work.mkdir(parents=True, exist_ok=True)
        run = Run(str(store.path), handle.run_id, handle.run_seq, str(work))
        calls = {
            "stage_inputs": lambda: stage_inputs(store, run, [inputs]),
            "plan_novelty": lambda: plan_novelty(store, run, settings, embed=False),
            "score_staged": lambda: score_staged(store, run, settings, embed=False),
            "commit_results": lambda: commit_results(store, run),
        }
        for name in STAGES:
            started = time.perf_counter()
            counts = calls[name]()
            report["stages"][name] = {
                "seconds": time.perf_counter() - started,
                "peak_bytes_so_far": _peak_self_bytes(),
                "counts": counts,
            }
        report["rows_in_db"] = {
            table: int(store.sql(f"SELECT count(*) AS n FROM {table}")["n"][0])
            for table in ("traces", "scores", "quarantine")
        }
    print(json.dumps(report))


def measure(inputs: str, db: str) -> None:
    """Start the scoring child, wait, and print its report with RUSAGE_CHILDREN's peak added."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--child", inputs, db],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        print(done.stdout)
        print(done.stderr, file=sys.stderr)
        raise SystemExit(f"child failed with exit code {done.returncode}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    report["peak_children_bytes"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    report["child_wall_s"] = wall
    print(json.dumps(report))


def generate(n: int, seed: int) -> None:
    """Write the data file (in its own process, so its memory stays out of the figures)."""
    from _common import synthetic_parquet

    synthetic_parquet(n, seed)


def gib(value: float) -> str:
    """Bytes as GiB with two decimals."""
    return f"{value / 1024**3:.2f} GiB"


def parse_args() -> argparse.Namespace:
    """The flags: --n, --seed, the common ones, and the hidden ones of the helper processes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="traces (default 1,000,000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", nargs=2, metavar=("PARQUET", "DB"), help=argparse.SUPPRESS)
    parser.add_argument("--measure", nargs=2, metavar=("PARQUET", "DB"), help=argparse.SUPPRESS)
    parser.add_argument("--generate", action="store_true", help=argparse.SUPPRESS)
    add_common_args(parser)
    return parser.parse_args()


def scoring_report(path: Path) -> tuple[dict[str, Any], int]:
    """The measuring process's report on scoring `path`, and the bytes of the database written.

    The database lives in a temporary folder under OUT_DIR, removed afterwards.
    """
    work = Path(tempfile.mkdtemp(prefix="bench_memory-", dir=OUT_DIR))
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--measure", str(path), str(work / "bench.duckdb")],
            capture_output=True,
            text=True,
            check=False,
        )
        db_bytes = sum(f.stat().st_size for f in work.glob("bench.duckdb*") if f.is_file())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if done.returncode != 0:
        print(done.stdout)
        print(done.stderr, file=sys.stderr)
        raise SystemExit(f"measurement failed with exit code {done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1]), db_bytes


def print_stages(report: dict[str, Any], n: int, total: float) -> None:
    """Print each stage's time, throughput and peak so far, then all four together."""
    print(f"{'stage':16s} {'seconds':>8s} {'traces/s':>12s} {'peak RSS so far':>16s}  counts")
    for name in STAGES:
        stage = report["stages"][name]
        print(
            f"{name:16s} {stage['seconds']:8.2f} {fmt_rate(n / stage['seconds']):>12s} "
            f"{gib(stage['peak_bytes_so_far']):>16s}  {stage['counts'] or ''}"
        )
    print(f"{'all four':16s} {total:8.2f} {fmt_rate(n / total):>12s}")
    print(
        f"(child's own peak after imports, before any stage: {gib(report['peak_after_imports'])})\n"
    )


def report_rows(peak: int, n: int, total: float) -> list[Check]:
    """The report table: the peak against the budget, and the end-to-end throughput."""
    return [
        Check(
            "peak RSS (ru_maxrss, children)",
            gib(peak),
            "",
            f"{peak / BUDGET_BYTES:.2f} of budget",
            "<= 4 GiB",
            peak <= BUDGET_BYTES,
        ),
        Check("peak RSS vs 4e9 bytes", f"{peak / 1e9:.2f} GB", "", "", "<= 4.00 GB", peak <= 4e9),
        Check("end-to-end throughput (traces/s)", fmt_rate(n / total), "", "", "", None),
    ]


def main() -> None:
    args = parse_args()
    if args.child:
        child(*args.child)
        return
    if args.measure:
        measure(*args.measure)
        return
    if args.generate:
        generate(args.n, args.seed)
        return

    info, load = begin("bench_memory: peak RSS scoring without the embedder", args)
    path = OUT_DIR / f"traces_{args.n}_seed{args.seed}.parquet"
    subprocess.run(
        [sys.executable, __file__, "--generate", "--n", str(args.n), "--seed", str(args.seed)],
        check=True,
    )
    report, db_bytes = scoring_report(path)
    peak = report["peak_children_bytes"]
    wall = report["child_wall_s"]

    n = args.n
    print(
        f"{n:,} traces from {path.name} ({path.stat().st_size / 1e6:.0f} MB); child wall time "
        f"{wall:.1f} s including interpreter start and imports (single run); database "
        f"{db_bytes / 1e6:.0f} MB; rows stored {report['rows_in_db']}\n"
    )
    total = sum(report["stages"][name]["seconds"] for name in STAGES)
    print_stages(report, n, total)
    print_table(report_rows(peak, n, total))
    end(info, load)
    save_result(
        "bench_memory",
        {
            "machine": info,
            "n": n,
            "peak_rss_bytes": peak,
            "budget_bytes": BUDGET_BYTES,
            "child_wall_s": wall,
            "stages": report["stages"],
            "rows_in_db": report["rows_in_db"],
            "peak_after_imports": report["peak_after_imports"],
            "db_bytes": db_bytes,
        },
    )


if __name__ == "__main__":
    main()
