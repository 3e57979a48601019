"""Kill a scoring run with SIGKILL at random moments, re-run it, and compare with a clean run.

Each trial starts from nothing but the archive: a fresh database is scored by a child process
that runs the score_traces stages in the flow's order (no Prefect server, no embedder), the
child is SIGKILLed after a random delay within the measured duration of a clean run
(counted from the moment the child has imported everything and opens the database), the
database must then open, and a second child run to completion must leave tables identical
to the clean run's (every table but `runs`, without the run identity columns).

    .venv/bin/python scripts/fault_injection.py [--kills 24] [--traces 2000] [--seed 7]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RUN_IDENTITY = ("run_id", "run_seq")

_CHILD = """
import sys
sys.path.insert(0, {root!r})
from pipelines import staging
from pipelines.scoring_steps import score_run, scoring_steps_of
from storage.config_files import load_settings
from storage.store.registry import held_store

archive, db = sys.argv[1], sys.argv[2]
config = sys.argv[3] if len(sys.argv) > 3 else None
settings = load_settings(config)
embed = settings.embedding.enabled and "--embed" in sys.argv
print("ready", flush=True)
with held_store(db) as store, scoring_steps_of(
    store, "score_traces", settings, embed=embed, recover=True
) as steps:
    steps.step("read", staging.stage_inputs, store, steps.run, [archive])
    score_run(steps, settings, embed, config, None)
    steps.finish("completed", "")
"""


def child_command(
    archive: Path, db: Path, config: Path | None = None, *, embed: bool = False
) -> list[str]:
    """The command of a child process that scores `archive` into `db` like score_traces."""
    args = [sys.executable, "-c", _CHILD.format(root=str(ROOT)), str(archive), str(db)]
    if config is not None:
        args.append(str(config))
    if embed:
        args.append("--embed")
    return args


def run_child(
    archive: Path,
    db: Path,
    config: Path | None = None,
    *,
    embed: bool = False,
    env: dict[str, str] | None = None,
) -> None:
    """Score `archive` into `db` in a child process, to completion."""
    done = subprocess.run(
        child_command(archive, db, config, embed=embed),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"child run failed ({done.returncode}):\n{done.stderr[-4000:]}")


def snapshot(db: Path) -> dict[str, list[str]]:
    """Every table but `runs`, rows sorted, without the run identity columns."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        con.execute("SET TimeZone = 'UTC'")
        tables = [
            name for (name,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
        ]
        out: dict[str, list[str]] = {}
        for name in sorted(tables):
            if name == "runs":
                continue
            columns = [
                column
                for (column,) in con.execute(
                    "SELECT column_name FROM duckdb_columns() WHERE table_name = ? "
                    "ORDER BY column_index",
                    [name],
                ).fetchall()
                if column not in RUN_IDENTITY
            ]
            select = ", ".join(f'"{c}"' for c in columns)
            out[name] = sorted(map(repr, con.execute(f"SELECT {select} FROM {name}").fetchall()))
        return out
    finally:
        con.close()


def run_statuses(db: Path) -> list[str]:
    """The status of every logged run, oldest first (none when the schema is not there yet).

    Opening the file is the check that matters: a run killed before its schema committed
    leaves a valid database without tables.
    """
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = {
            name for (name,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
        }
        if "runs" not in tables:
            return []
        return [s for (s,) in con.execute("SELECT status FROM runs ORDER BY run_seq").fetchall()]
    finally:
        con.close()


@dataclass
class Trial:
    """One kill: when, whether the child had already finished, what the database held after."""

    delay_s: float
    killed: bool
    opened: bool
    statuses_after_kill: list[str]
    statuses_after_rerun: list[str]
    identical: bool
    error: str = ""


def write_archive(folder: Path, n_traces: int, days: int = 3) -> Path:
    """A small demo archive (daily files with the usual faults) in `folder`."""
    from tracegrade.demo import write_demo_archive

    folder.mkdir(parents=True, exist_ok=True)
    write_demo_archive(folder, n_traces=n_traces, days=days)
    return folder


def _start(archive: Path, db: Path) -> subprocess.Popen[str]:
    """Start a child run and return once its imports are done and it opens the database."""
    child = subprocess.Popen(
        child_command(archive, db), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert child.stdout is not None
    child.stdout.readline()  # "ready", or "" when the child died first
    return child


def measure(archive: Path, work: Path) -> tuple[float, dict[str, list[str]]]:
    """Seconds of a clean child run (from opening the database to exit), and its tables."""
    db = work / "clean.duckdb"
    child = _start(archive, db)
    started = time.perf_counter()
    with child:  # closes its pipe
        if child.wait() != 0:
            raise RuntimeError("the clean child run failed")
    return time.perf_counter() - started, snapshot(db)


def trial(archive: Path, work: Path, delay: float, expected: dict[str, Any]) -> Trial:
    """Kill a child run after `delay` seconds, check the database opens, re-run, compare."""
    db = work / "killed.duckdb"
    for leftover in work.glob("killed.duckdb*"):
        leftover.unlink()
    shutil.rmtree(work / ".killed.duckdb.work", ignore_errors=True)
    with _start(archive, db) as child:  # closes its pipe
        time.sleep(delay)
        killed = child.poll() is None
        if killed:
            os.kill(child.pid, signal.SIGKILL)
        child.wait()
    opened, statuses, error = True, [], ""
    if db.exists():
        try:
            statuses = run_statuses(db)
        except Exception as exc:  # noqa: BLE001 - any failure to open is the finding
            opened, error = False, f"{type(exc).__name__}: {exc}"
    run_child(archive, db)
    after = run_statuses(db)
    return Trial(delay, killed, opened, statuses, after, snapshot(db) == expected, error)


def inject(archive: Path, work: Path, kills: int, seed: int = 0) -> tuple[float, list[Trial]]:
    """Measure a clean run, then kill `kills` runs at random points spread over its duration."""
    work.mkdir(parents=True, exist_ok=True)
    duration, expected = measure(archive, work)
    rng = random.Random(seed)
    # one random point in each of `kills` equal parts of the run: spread over all of it
    delays = [duration * (i + rng.random()) / kills for i in range(kills)]
    return duration, [trial(archive, work, delay, expected) for delay in delays]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=24)
    parser.add_argument("--traces", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tracegrade-faults-") as tmp:
        archive = write_archive(Path(tmp) / "archive", args.traces)
        duration, trials = inject(archive, Path(tmp) / "work", args.kills, args.seed)
    print(f"clean run: {duration:.2f} s; {len(trials)} kills\n")
    print(
        f"{'kill at (s)':>11}  {'killed':>6}  {'opens':>5}  {'identical':>9}  runs after kill -> after re-run"
    )
    for t in trials:
        print(
            f"{t.delay_s:11.3f}  {str(t.killed):>6}  {str(t.opened):>5}  {str(t.identical):>9}  "
            f"{','.join(t.statuses_after_kill) or '-'} -> {','.join(t.statuses_after_rerun)}"
        )
    for t in trials:
        if t.error:
            print(f"kill at {t.delay_s:.3f} s: the database did not open: {t.error}")
    bad = [t for t in trials if not (t.opened and t.identical)]
    print(f"\n{len(trials) - len(bad)}/{len(trials)} trials identical to the clean run")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
