"""Shared pieces of the benchmarks: flags, timing, data files, the report table.

Benchmarks print figures; they never assert on time. Every script prints its own figure and
its baseline side by side, measured in the same run on the same machine (described by
_machine, whose names are re-exported here).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from _machine import (
    PROBE_LOOPS,
    MachineLoad,
    machine_info,
    memory_probe,
    print_machine,
    speed_probe,
    wait_for_quiet,
)

__all__ = [
    "add_common_args",
    "begin",
    "bench_args",
    "end",
    "OUT_DIR",
    "Check",
    "Comparison",
    "MachineLoad",
    "Timing",
    "fmt_rate",
    "machine_info",
    "print_machine",
    "per_row_baseline",
    "print_table",
    "save_result",
    "short_machine",
    "synthetic_parquet",
    "timed",
    "wait_for_quiet",
]

OUT_DIR = Path(__file__).resolve().parent / "out"
"""Generated data and result files (gitignored)."""

LONG_S = 10.0
"""A measurement that takes at least this long is taken once; shorter ones are best of 3."""

T = TypeVar("T")


def peak_rss_mib() -> float:
    """This process's peak resident memory since it started its program, in MiB (VmHWM: a
    child's ru_maxrss as its parent reads it is the highest of every child so far)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def add_common_args(parser: argparse.ArgumentParser) -> None:
    """Flags every benchmark takes."""
    parser.add_argument(
        "--no-wait",
        action="store_true",
        help="start at once instead of waiting until other processes leave the CPU idle",
    )


def bench_args(description: str, *, n_default: int, unit: str) -> argparse.Namespace:
    """The parsed flags of a benchmark sized by --n (how many `unit`) and --seed."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--n", type=int, default=n_default, help=f"{unit} (default {n_default:,})")
    parser.add_argument("--seed", type=int, default=0)
    add_common_args(parser)
    return parser.parse_args()


def begin(title: str, args: argparse.Namespace) -> tuple[dict[str, Any], MachineLoad]:
    """Print title and machine, wait for a quiet machine unless --no-wait, start the load meter."""
    info = print_machine(title)
    if not args.no_wait:
        info["others_before_start"] = wait_for_quiet()
    info["speed_probe_s"] = speed_probe()
    info["memory_probe_gb_s"] = memory_probe()
    print(
        f"CPU speed probe: {info['speed_probe_s']:.3f} s for {PROBE_LOOPS:,} Python "
        f"multiplications (best of 3; lower is faster); memory copy "
        f"{info['memory_probe_gb_s']:.1f} GB/s"
    )
    sys.stdout.flush()
    return info, MachineLoad()


def end(info: dict[str, Any], load: MachineLoad) -> None:
    """Print (and record in `info`) how much CPU other processes took during the run."""
    share = load.others_share()
    info["others_during_run"] = share
    note = "" if share < 0.05 else "  <- figures disturbed by other work on this machine"
    print(f"CPU used by other processes during the run: {share:.0%}{note}")
    after, copied = speed_probe(), memory_probe()
    info.update(speed_probe_after_s=after, memory_probe_after_gb_s=copied)
    before, was = info["speed_probe_s"], info["memory_probe_gb_s"]  # begin's
    warning = (
        "  <- the CPU's speed changed during the run: figures are not comparable"
        if abs(after / before - 1) > 0.15
        else ""
    )
    print(
        f"CPU speed probe after the run: {after:.3f} s "
        f"(before: {before:.3f} s, {after / before:.2f}x){warning}"
    )
    print(
        f"memory copy after the run: {copied:.1f} GB/s (before: {was:.1f} GB/s, {copied / was:.2f}x)"
    )


@dataclass
class Timing:
    """Seconds of the best repetition, how many ran, and the last result."""

    seconds: float
    repetitions: int
    all_seconds: list[float] = field(default_factory=list)
    result: Any = None

    @property
    def how(self) -> str:
        """'best of 3' or 'single run'."""
        return f"best of {self.repetitions}" if self.repetitions > 1 else "single run"


def timed(
    fn: Callable[[], T],
    *,
    repetitions: int = 3,
    long_s: float = LONG_S,
    setup: Callable[[], None] | None = None,
) -> Timing:
    """Time `fn` with perf_counter: best of `repetitions`, or one run when it takes >= long_s.

    `setup` runs untimed before every repetition.
    """
    seconds: list[float] = []
    result: Any = None
    for _ in range(repetitions):
        if setup is not None:
            setup()
        result = None
        gc.collect()
        started = time.perf_counter()
        result = fn()
        seconds.append(time.perf_counter() - started)
        if seconds[-1] >= long_s:
            break
    return Timing(min(seconds), len(seconds), seconds, result)


@dataclass(frozen=True)
class Check:
    """One line of the report: our figure, the baseline's, and the target."""

    name: str
    ours: str
    baseline: str
    ratio: str
    target: str
    passed: bool | None


def read_leaves(path: Path, columns: list[str]) -> Any:
    """The leaf `columns` of the Parquet file `path` (a pyarrow Table), nesting kept: what a
    bench decodes when it reads only what the work needs."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).read(columns=columns)


def lazy_frame(table: Any) -> Any:
    """A pyarrow Table as a Polars LazyFrame."""
    import polars as pl

    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame.lazy()


def against_rows(
    args: argparse.Namespace,
    vectorized: Callable[[Path], Any],
    columns: list[str],
    loop: Callable[[list[dict[str, Any]]], Any],
    loop_name: str,
) -> tuple[Comparison, dict[str, float]]:
    """The synthetic trace file of `args.n` traces (seed `args.seed`) worked through by
    `vectorized(path)` and by the per-row baseline (`loop` over the leaf `columns` read as
    Python rows), in one run; prints both timings and the baseline's split, and returns the
    comparison (its timings hold each side's result) and that split."""
    import polars as pl
    import pyarrow.parquet as pq

    print(f"polars threads: {pl.thread_pool_size()}")
    path = synthetic_parquet(args.n, args.seed)
    n = pq.ParquetFile(path).metadata.num_rows
    ours = timed(lambda: vectorized(path))
    base, split = per_row_baseline(path, columns, loop)
    compared = Comparison(n, ours, base)
    print(f"\n{compared.timings('traces')}")
    print(
        f"baseline split: read + to_pylist {split['read_to_python']:.2f} s, "
        f"{loop_name} {split['reference_loop']:.2f} s\n"
    )
    return compared, split


def read_breakdown(
    path: Path, columns: list[str], project: Callable[[Any], Any]
) -> tuple[dict[str, float], Any]:
    """The first parts of a vectorized breakdown, each materialized on its own, best of 3:
    reading the leaf `columns` of `path`, and `project`ing them into a Polars LazyFrame
    (collected); with the collected frame, for the parts that follow."""
    parts: dict[str, float] = {}
    read = timed(lambda: read_leaves(path, columns))
    parts["read parquet (pyarrow, needed leaves)"] = read.seconds
    projected = timed(lambda: project(read.result).collect())
    parts["to polars + project steps"] = projected.seconds
    return parts, projected.result


def per_row_baseline(
    path: Path, columns: list[str], loop: Callable[[list[dict[str, Any]]], T]
) -> tuple[Timing, dict[str, float]]:
    """Time a per-row baseline: the leaf `columns` read into Python rows, then `loop` over them.

    Returns the timing (best of 3, as `timed`) and the split of its best repetition:
    read_to_python (pyarrow read + to_pylist) and reference_loop (`loop`), in seconds.
    """
    splits: list[dict[str, float]] = []

    def run() -> T:
        split: dict[str, float] = {}
        splits.append(split)
        started = time.perf_counter()
        rows = read_leaves(path, columns).to_pylist()
        split["read_to_python"] = time.perf_counter() - started
        started = time.perf_counter()
        result = loop(rows)
        split["reference_loop"] = time.perf_counter() - started
        return result

    timing = timed(run)
    return timing, splits[timing.all_seconds.index(timing.seconds)]


@dataclass(frozen=True)
class Comparison:
    """Our timing and the baseline's over the same `n` items, measured in one run."""

    n: int
    ours: Timing
    base: Timing

    @property
    def ours_rate(self) -> float:
        """Our items per second."""
        return self.n / self.ours.seconds

    @property
    def base_rate(self) -> float:
        """The baseline's items per second."""
        return self.n / self.base.seconds

    @property
    def ratio(self) -> float:
        """How many times faster we are than the baseline."""
        return self.ours_rate / self.base_rate

    def timings(self, unit: str) -> str:
        """'N units; tracegrade best of 3 (a, b, c s), baseline ...': every repetition shown."""
        return (
            f"{self.n:,} {unit}; tracegrade {self.ours.how} ({_seconds(self.ours)} s), "
            f"baseline {self.base.how} ({_seconds(self.base)} s)"
        )

    def throughput_check(self, unit: str, target_ratio: float, prefix: str = "") -> Check:
        """The throughput row of the report, with the ratio target it must reach."""
        return Check(
            f"{prefix}throughput ({unit}/s)",
            fmt_rate(self.ours_rate),
            fmt_rate(self.base_rate),
            f"{self.ratio:.1f}x",
            f"ratio >= {target_ratio:.0f}",
            self.ratio >= target_ratio,
        )

    def wall_time_check(self) -> Check:
        """The wall-time row of the report (no target)."""
        return Check(
            "wall time (s)", f"{self.ours.seconds:.3f}", f"{self.base.seconds:.3f}", "", "", None
        )

    def figures(self) -> dict[str, Any]:
        """The timing figures every comparison saves, under the keys docs/performance.md uses."""
        return {
            "n": self.n,
            "vectorized_s": self.ours.seconds,
            "vectorized_how": self.ours.how,
            "baseline_s": self.base.seconds,
            "baseline_how": self.base.how,
            "vectorized_rate": self.ours_rate,
            "baseline_rate": self.base_rate,
            "ratio": self.ratio,
        }


def _seconds(timing: Timing) -> str:
    return ", ".join(f"{s:.2f}" for s in timing.all_seconds)


def median_spread(seconds: list[float]) -> str:
    """The median of repeated timings with their range: '3.51 (3.46 to 3.89)'."""
    return f"{statistics.median(seconds):.2f} ({min(seconds):.2f} to {max(seconds):.2f})"


def short_machine(info: dict[str, Any]) -> str:
    """The machine in a few words, to print beside each figure: CPU model and usable cores."""
    cpu = str(info["cpu"]).replace("(R)", "").replace(" Processor", "")
    return f"{cpu}, {info['cores_usable']} cores"


def print_table(rows: list[Check], machine: str | None = None) -> None:
    """Print the checks as an aligned table with PASS/MISS (and the machine on every row)."""
    header: tuple[str, ...] = ("figure", "tracegrade", "baseline", "ratio", "target", "result")
    cells = [header + (("machine",) if machine else ())] + [
        (
            r.name,
            r.ours,
            r.baseline,
            r.ratio,
            r.target,
            "-" if r.passed is None else ("PASS" if r.passed else "MISS"),
        )
        + ((machine,) if machine else ())
        for r in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    for index, row in enumerate(cells):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
        if index == 0:
            print("  ".join("-" * width for width in widths))
    print()


def save_result(name: str, payload: dict[str, Any]) -> Path:
    """Write the figures of a run to bench/out/<name>.json (for docs/performance.md)."""
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    path = OUT_DIR / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, default=str))
    print(f"figures written to {path}")
    return path


def synthetic_parquet(n: int, seed: int = 0, directory: Path = OUT_DIR) -> Path:
    """One Parquet file of `n` synthetic traces, generated once and reused across runs."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"traces_{n}_seed{seed}.parquet"
    if path.exists():
        print(f"data: reusing {path} ({path.stat().st_size / 1e6:.0f} MB)")
        return path
    from transforms.synth.traces import synthetic_traces

    started = time.perf_counter()
    frame = synthetic_traces(n, seed=seed)
    partial = path.with_suffix(".partial")
    frame.write_parquet(partial)
    partial.rename(path)
    del frame
    gc.collect()
    print(
        f"data: generated {n:,} traces into {path} ({path.stat().st_size / 1e6:.0f} MB) "
        f"in {time.perf_counter() - started:.1f} s"
    )
    return path


def fmt_rate(value: float) -> str:
    """A throughput with thousands separators."""
    return f"{value:,.0f}"
