"""Shared pieces of the benchmarks: machine description, timing, data files, the report table.

Benchmarks print figures; they never assert on time. Every script prints its own figure and
its baseline side by side, measured in the same run on the same machine.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TypeVar

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
    "synthetic_parquet",
    "timed",
    "wait_for_quiet",
]

OUT_DIR = Path(__file__).resolve().parent / "out"
"""Generated data and result files (gitignored)."""

LONG_S = 10.0
"""A measurement that takes at least this long is taken once; shorter ones are best of 3."""

T = TypeVar("T")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _cpu_detail() -> str:
    """Family/model, SIMD flags that matter for float32 math, and whether this is a VM guest."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("cpu family", "model", "flags", "cpu MHz") and key not in fields:
                fields[key] = value.strip()
            if not line.strip() and fields:
                break
    except OSError:
        return ""
    flags = set(fields.get("flags", "").split())
    simd = [name for name in ("avx2", "fma", "avx512f", "amx_tile") if name in flags]
    guest = ", VM guest" if "hypervisor" in flags else ""
    return (
        f"family {fields.get('cpu family', '?')} model {fields.get('model', '?')}, "
        f"{float(fields.get('cpu MHz', 'nan')):.0f} MHz, {'+'.join(simd) or 'no AVX2'}{guest}"
    )


def _ram_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024**2
    except OSError:
        pass
    return float("nan")


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def machine_info() -> dict[str, Any]:
    """CPU model, cores, RAM, Python and library versions of this machine."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": _cpu_model(),
        "cpu_detail": _cpu_detail(),
        "cores": os.cpu_count(),
        "cores_usable": usable,
        "ram_gib": round(_ram_gib(), 1),
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "polars": _version("polars"),
        "pyarrow": _version("pyarrow"),
        "duckdb": _version("duckdb"),
        "torch": _version("torch"),
        "sentence-transformers": _version("sentence-transformers"),
        "date": date.today().isoformat(),
    }


def add_common_args(parser: argparse.ArgumentParser) -> None:
    """Flags every benchmark takes."""
    parser.add_argument(
        "--no-wait", action="store_true",
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
    return info, MachineLoad()


def end(info: dict[str, Any], load: MachineLoad) -> None:
    """Print (and record in `info`) how much CPU other processes took during the run."""
    share = load.others_share()
    info["others_during_run"] = share
    note = "" if share < 0.05 else "  <- figures disturbed by other work on this machine"
    print(f"CPU used by other processes during the run: {share:.0%}{note}")


def print_machine(title: str) -> dict[str, Any]:
    """Print the benchmark title and the machine it runs on; returns the machine info."""
    info = machine_info()
    print(f"== {title}")
    print(
        f"machine: {info['cpu']} ({info['cpu_detail']}), {info['cores']} cores ({info['cores_usable']} usable), "
        f"{info['ram_gib']} GiB RAM"
    )
    print(
        f"python {info['python']}, numpy {info['numpy']}, polars {info['polars']}, "
        f"pyarrow {info['pyarrow']}, duckdb {info['duckdb']}, torch {info['torch']}, "
        f"sentence-transformers {info['sentence-transformers']}"
    )
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print()
    sys.stdout.flush()
    return info


def _busy_jiffies() -> tuple[float, float]:
    """(busy, total) CPU time of the whole machine so far, in seconds."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)
    tick = os.sysconf("SC_CLK_TCK")
    return (sum(fields[:8]) - idle) / tick, sum(fields[:8]) / tick


class MachineLoad:
    """CPU used by other processes while a benchmark ran: a measure of how clean the figures are.

    Our own CPU time (this process and its waited-for children) is subtracted from the
    machine's busy time; what is left was spent by someone else.
    """

    def __init__(self) -> None:
        self._start = _busy_jiffies()
        self._own = self._own_cpu()
        self._wall = time.perf_counter()

    @staticmethod
    def _own_cpu() -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    def others_share(self) -> float:
        """Share of the machine's CPU capacity used by other processes since construction."""
        busy, _total = _busy_jiffies()
        cores = os.cpu_count() or 1
        wall = time.perf_counter() - self._wall
        others = (busy - self._start[0]) - (self._own_cpu() - self._own)
        return max(0.0, others) / (wall * cores) if wall > 0 else 0.0


def wait_for_quiet(limit_s: float = 900.0, threshold: float = 0.15) -> float:
    """Wait (up to limit_s) until other processes use under `threshold` of the CPU for 5 s.

    Returns the share measured last. Benchmarks on a shared machine are otherwise noise.
    """
    deadline = time.monotonic() + limit_s
    while True:
        probe = MachineLoad()
        time.sleep(5.0)
        share = probe.others_share()
        if share < threshold or time.monotonic() > deadline:
            print(f"machine load by other processes before start: {share:.0%} of CPU")
            return share
        print(f"waiting: other processes use {share:.0%} of the CPU", flush=True)


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


def timed(fn: Callable[[], T], *, repetitions: int = 3, long_s: float = LONG_S,
          setup: Callable[[], None] | None = None) -> Timing:
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


def per_row_baseline(
    path: Path, columns: list[str], loop: Callable[[list[dict[str, Any]]], T]
) -> tuple[Timing, dict[str, float]]:
    """Time a per-row baseline: the leaf `columns` read into Python rows, then `loop` over them.

    Returns the timing (best of 3, as `timed`) and the split of its best repetition:
    read_to_python (pyarrow read + to_pylist) and reference_loop (`loop`), in seconds.
    """
    import pyarrow.parquet as pq

    splits: list[dict[str, float]] = []

    def run() -> T:
        split: dict[str, float] = {}
        splits.append(split)
        started = time.perf_counter()
        rows = pq.ParquetFile(path).read(columns=columns).to_pylist()
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


def print_table(rows: list[Check]) -> None:
    """Print the checks as an aligned table with PASS/MISS."""
    header = ("figure", "tracegrade", "baseline", "ratio", "target", "result")
    cells = [header] + [
        (r.name, r.ours, r.baseline, r.ratio, r.target,
         "-" if r.passed is None else ("PASS" if r.passed else "MISS"))
        for r in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
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
