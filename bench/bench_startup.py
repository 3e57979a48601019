"""bench_startup: how long the small commands take, whole and to start (issue 41).

The commands a person runs by hand on the demo's database (`tracegrade demo --no-embedder`,
4,950 traces): `sql`, `report`, `confidence --evaluate` and a rerun of `score` over the demo's
archive, which has nothing new. Each is timed as a whole process (min, median and max of
--runs), and its start-up is measured too: Python's own start (`python -c pass`, whole) plus
every import the command makes, wherever it makes it (the sum of `python -X importtime`'s
top-level entries, less those of the bare interpreter): the libraries and modules it loads.
The rest of the whole time is the command's work: queries, hashing, the bootstrap, building
the page.

The target is start-up under 0.5 s. The baseline is the same commands from another checkout
of the code (--baseline-src, e.g. a `git worktree` of the commit before), run in turn with
this one, pair by pair, on the same database and Python; ratios are now / baseline.

Python's bytecode cache is on for the commands (this workplace sets PYTHONDONTWRITEBYTECODE=1,
which recompiles every module at every start; a user's install keeps its .pyc files).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import OUT_DIR, add_common_args, begin, end, save_result

ROOT = Path(__file__).resolve().parents[1]

_MAIN = "import sys; from tracegrade.cli.app import main; sys.exit(main())"


def _commands(db: Path, archive: Path, out: Path) -> dict[str, list[str]]:
    return {
        "sql (a count)": ["sql", "--db", str(db), "SELECT count(*) FROM latest_scores"],
        "report": ["report", "--db", str(db), "--out", str(out / "report.html")],
        "confidence --evaluate": ["confidence", "--db", str(db), "--evaluate", "success"],
        "score, a rerun with nothing new": [
            "score",
            str(archive),
            "--db",
            str(db),
            "--no-embedder",
        ],
    }


def _env(src: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",)}
    env.pop("PREFECT_API_URL", None)
    env["PYTHONPATH"] = str(src)
    return env


def _run(src: Path, args: list[str], *, imports: bool = False) -> float:
    """Seconds of one whole command; with `imports`, the seconds its imports took."""
    flags = ["-X", "importtime"] if imports else []
    started = time.time()
    done = subprocess.run(
        [sys.executable, *flags, "-c", _MAIN if args else "pass", *args],
        env=_env(src),
        cwd=tempfile.gettempdir(),  # `python -c` puts the working folder first on sys.path
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    whole = time.time() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    if not imports:
        return whole
    rows = [line.split("|") for line in done.stderr.splitlines() if line.startswith("import time:")]
    top = [int(cumulative) for _, cumulative, name in rows[1:] if not name[1:].startswith(" ")]
    return sum(top) / 1e6  # the first row is the header


def _shown(figures: tuple[float, float, float]) -> str:
    return " / ".join(f"{value:.3f}" for value in figures)


def _stats(values: list[float]) -> tuple[float, float, float]:
    return min(values), statistics.median(values), max(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each command (default 7)")
    parser.add_argument(
        "--baseline-src", type=Path, help="another checkout of the code, timed in turn with this"
    )
    add_common_args(parser)
    args = parser.parse_args()
    info, load = begin("bench_startup: the small commands, whole and to start", args)
    demo = OUT_DIR / "startup-demo"
    if not (demo / "demo.duckdb").exists():
        shutil.rmtree(demo, ignore_errors=True)
        subprocess.run(
            [sys.executable, "-c", _MAIN, "demo", "--no-embedder", "--dir", str(demo)],
            env=_env(ROOT),
            cwd=tempfile.gettempdir(),
            check=True,
            capture_output=True,
        )
    bare = statistics.median(_run(ROOT, []) for _ in range(args.runs))
    bare_imports = statistics.median(_run(ROOT, [], imports=True) for _ in range(args.runs))
    print(f"python -c pass: {bare:.3f} s (median), its own imports {bare_imports:.3f} s")
    sources = {"now": ROOT} | ({"baseline": args.baseline_src} if args.baseline_src else {})
    results: dict[str, dict[str, dict[str, list[float]]]] = {}
    with tempfile.TemporaryDirectory() as out:
        commands = _commands(demo / "demo.duckdb", demo / "archive", Path(out))
        for name, command in commands.items():
            for src in sources.values():
                _run(src, command)  # bytecode written, files in the page cache
            for _ in range(args.runs):
                for label, src in sources.items():
                    cell = results.setdefault(name, {}).setdefault(label, {})
                    cell.setdefault("whole", []).append(_run(src, command))
                    loading = _run(src, command, imports=True) - bare_imports
                    cell.setdefault("start", []).append(bare + loading)
    print(f"\n{args.runs} runs of each, in turn; seconds as min / median / max\n")
    header = "| command | now, whole | now, start-up | start-up under 0.5 s (median) |"
    if args.baseline_src:
        header += " baseline, whole | baseline, start-up | whole, now/baseline |"
        header += " start-up, now/baseline |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for name, cells in results.items():
        now_whole, now_start = _stats(cells["now"]["whole"]), _stats(cells["now"]["start"])
        row = f"| {name} | {_shown(now_whole)} | {_shown(now_start)} |"
        row += f" {'MET' if now_start[1] < 0.5 else 'MISS'} |"
        if args.baseline_src:
            base_whole = _stats(cells["baseline"]["whole"])
            base_start = _stats(cells["baseline"]["start"])
            row += f" {_shown(base_whole)} | {_shown(base_start)} |"
            row += f" {now_whole[1] / base_whole[1]:.2f} | {now_start[1] / base_start[1]:.2f} |"
        print(row)
    end(info, load)
    save_result("startup", {"machine": info, "runs": args.runs, "results": results})


if __name__ == "__main__":
    main()
