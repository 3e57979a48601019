"""A command stopped by a signal: SIGTERM and SIGINT end it with 143 and 130 and a failed run
record; SIGKILL, which nothing can catch, leaves no process of it behind (its temporary
Prefect server dies with it)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import query_rows

from transforms.synth.traces import synthetic_traces, to_json_records

TRACEGRADE = str(Path(sys.executable).with_name("tracegrade"))


def _export(folder: Path, n: int) -> Path:
    path = folder / "day.jsonl"
    records = to_json_records(synthetic_traces(n, seed=3))
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def _descendants(pid: int) -> set[int]:
    """Every live process below `pid`, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found, pending = set(), [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.add(child)
            pending.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("PREFECT_API_URL", None)
    return subprocess.Popen(
        [TRACEGRADE, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _server_answering(parent: int, deadline: float) -> int:
    """The pid of the temporary Prefect server below `parent`, once its API answers."""
    while time.monotonic() < deadline:
        for pid in _descendants(parent):
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"uvicorn" in command and b"--port" in command:
                port = command[command.index(b"--port") + 1].decode()
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=1):
                        return pid
                except OSError:
                    pass
        time.sleep(0.2)
    raise AssertionError("the temporary Prefect server never answered")


@pytest.mark.slow
def test_sigkill_after_the_server_started_leaves_no_process(tmp_path: Path) -> None:
    export = _export(tmp_path, 2000)
    child = _start(
        ["score", str(export), "--db", str(tmp_path / "t.duckdb"), "--no-embedder", "--prefect"],
        tmp_path,
    )
    try:
        server = _server_answering(child.pid, time.monotonic() + 120)
        family = _descendants(child.pid) | {server}
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=30)
        time.sleep(5)
        assert [pid for pid in family if _alive(pid)] == []
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()


def _wait_for_run_folder(work: Path, child: subprocess.Popen[str]) -> None:
    """Wait until the run has begun (its work folder exists), however slow the machine is;
    reading 20,000 traces then takes longer than the signal takes to arrive."""
    deadline = time.monotonic() + 120
    while not (work.is_dir() and any(work.iterdir())):
        assert child.poll() is None, "the run ended before it could be stopped"
        assert time.monotonic() < deadline, "the run did not begin within 120 s"
        time.sleep(0.05)


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_and_sigint_stop_the_run_as_failed_with_their_status(
    tmp_path: Path, signum: int, status: int
) -> None:
    export = _export(tmp_path, 20_000)
    db = tmp_path / "t.duckdb"
    child = _start(["score", str(export), "--db", str(db), "--no-embedder"], tmp_path)
    _wait_for_run_folder(tmp_path / ".t.duckdb.work", child)
    child.send_signal(signum)
    _, err = child.communicate(timeout=120)
    assert child.returncode == status, err
    assert re.search(rf"stopped by {signal.Signals(signum).name}", err)
    assert "Traceback" not in err
    assert query_rows(db, "SELECT status FROM runs") == [("failed",)]
    assert not any(p.name.endswith(".work") and any(p.iterdir()) for p in tmp_path.iterdir())


def test_a_stop_request_as_the_run_folder_appears_is_raised_once_the_run_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's folder is there as soon as it is held, before the run is recorded: a stop
    request then (the test above sends it as soon as it sees the folder) waits until the run
    is recorded, so that it ends recorded as failed. Before, a request in that moment left no
    record at all (the test above failed so once in a clean clone)."""
    from pipelines import runs
    from storage.store import interrupts
    from storage.store.duckdb_store import DuckDBStore

    monkeypatch.setattr(interrupts, "_requested", [])
    monkeypatch.setattr(interrupts, "_raised", [])
    held = runs.hold_alive

    def hold_and_stop(folder: Path) -> Any:
        alive = held(folder)
        interrupts.interrupt(KeyboardInterrupt())  # SIGINT as the folder appears
        return alive

    monkeypatch.setattr(runs, "hold_alive", hold_and_stop)
    db = tmp_path / "t.duckdb"
    with (
        DuckDBStore(str(db)) as store,
        pytest.raises(KeyboardInterrupt),
        runs.RunSteps(store, "score", config={}, config_hash="x"),
    ):
        pass
    assert query_rows(db, "SELECT status FROM runs") == [("failed",)]
    assert not any(p.name.endswith(".work") and any(p.iterdir()) for p in tmp_path.iterdir())
