"""The machine a benchmark runs on: what it is, how busy other processes keep it, and how fast
its CPU runs Python today.

Figures mean little without the CPU, core count and library versions they were taken with,
nor on a machine that other work keeps busy; every benchmark prints both. A virtual machine
can also run slower than its model says without any process of its own being busy (a host
shared with other guests): on machine I the same 12-trace run took 2.45 s one morning and
1.14 s an hour later, its CPU seconds halved. `speed_probe` times a fixed piece of Python
before and after a benchmark, so that figures taken on a slowed host can be told apart.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from datetime import date
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

__all__ = [
    "PROBE_LOOPS",
    "MachineLoad",
    "machine_info",
    "print_machine",
    "memory_probe",
    "speed_probe",
    "wait_for_quiet",
]


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
    wanted = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile")
    simd = [name for name in wanted if name in flags]
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
        "openvino": _version("openvino"),
        "onnxruntime": _version("onnxruntime"),
        "date": date.today().isoformat(),
    }


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


PROBE_LOOPS = 10_000_000


def speed_probe(repeats: int = 3) -> float:
    """Seconds (best of `repeats`) this process takes for a fixed pure-Python loop of
    `PROBE_LOOPS` multiplications: 0.66-0.69 s on machine I at full speed (docs/performance.md).
    One core; compare it only between figures of the same machine kind."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        sum(i * i for i in range(PROBE_LOOPS))
        best = min(best, time.perf_counter() - started)
    return best


PROBE_BYTES = 256 << 20


def memory_probe(repeats: int = 5) -> float:
    """GB/s (best of `repeats`) of copying `PROBE_BYTES` from one NumPy array to another, far
    past the caches: what a host's other guests take of its memory bandwidth shows here and
    not in `speed_probe` (28-31 GB/s on machine I). Reads and writes are both counted."""
    import numpy as np

    source = np.ones(PROBE_BYTES // 8)
    target = np.empty_like(source)
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - started)
    return 2 * source.nbytes / best / 1e9


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
        f"sentence-transformers {info['sentence-transformers']}, openvino {info['openvino']}, "
        f"onnxruntime {info['onnxruntime']}"
    )
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print()
    sys.stdout.flush()
    return info
