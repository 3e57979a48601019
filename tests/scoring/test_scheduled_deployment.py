"""The deployments of prefect.yaml on a real Prefect server, as an operator starts them: the
scheduler must create the runs, and a worker must run them to the end.

`prefect server start`, the work pool and queue of docs/operating.md, `prefect deploy --all` of
a copy of prefect.yaml whose schedules fire every few seconds (everything else as written:
entry points, pull step, pool, queue, concurrency, the nightly's configuration files), and
`prefect worker start`. The test waits for a run the scheduler created (auto_scheduled) of
the nightly and of the judge collector, and checks how each ended and what it left.

With SQLAlchemy 2.1 (unpinned, Prefect 3.8.8's scheduler fails on its bulk inserts every loop)
no run is ever created and this test fails with the server's log.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

from tracegrade.demo import write_demo_archive

ROOT = Path(__file__).resolve().parents[2]
EVERY_S = 10
"""The test schedules' interval: the first run of each is due within this many seconds."""
DEADLINE_S = 300.0
"""How long the scheduled runs get to be created and finish (about 60-90 s on 2 cores)."""

_KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _api(url: str, path: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url + path, data=data, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _healthy(url: str) -> bool:
    try:
        return _api(url, "/health") is True
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _prefect(env: dict[str, str], *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "prefect", *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, f"prefect {' '.join(args)}:\n{done.stdout}\n{done.stderr}"


def _start(args: list[str], env: dict[str, str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
    """`prefect ARGS` in a process group of its own, its output to `log`."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "prefect", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a process started in its own group, and whatever it started (flow-run children)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _tail(path: Path, lines: int = 60) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


def _test_deployments(folder: Path) -> tuple[Path, Path]:
    """prefect.yaml with each schedule every EVERY_S seconds (a schedule shipped off stays off:
    the Phoenix pull needs a Phoenix) and the paths in `folder`; the rest as written. Returns the file and the database the nightly writes."""
    exports = folder / "exports"
    write_demo_archive(exports, n_traces=60, days=2)
    db = folder / "db" / "tracegrade.duckdb"
    db.parent.mkdir()
    project = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    for deployment in project["deployments"]:
        if "schedules" in deployment:
            active = all(schedule.get("active", True) for schedule in deployment["schedules"])
            deployment["schedules"] = [{"interval": EVERY_S, "timezone": "UTC", "active": active}]
        parameters = deployment["parameters"]
        parameters["db"] = str(db)
        if "paths" in parameters:
            parameters["paths"] = [str(exports)]
    path = folder / "prefect.yaml"
    path.write_text(yaml.safe_dump(project, sort_keys=False))
    return path, db


@pytest.fixture
def operator_env(tmp_path: Path) -> Iterator[tuple[dict[str, str], str, Path]]:
    """A fresh Prefect server started with `prefect server start` (its own home, no UI), the
    environment the operator's shell has (PREFECT_API_URL, TRACEGRADE_HOME, no judge key), its
    URL and its log."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if k not in _KEYS and not k.startswith("PREFECT")}
    env.update(
        PREFECT_HOME=str(tmp_path / "prefect-home"),
        PREFECT_API_URL=url,
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_UI_ENABLED="false",
        PREFECT_LOGGING_LEVEL="INFO",
        TRACEGRADE_HOME=str(ROOT),
    )
    log = tmp_path / "server.log"
    server = _start(
        ["server", "start", "--host", "127.0.0.1", "--port", str(port)], env, log, tmp_path
    )
    try:
        deadline = time.monotonic() + 120
        while not _healthy(url):
            assert server.poll() is None, f"prefect server start exited:\n{_tail(log)}"
            assert time.monotonic() < deadline, f"the server did not start:\n{_tail(log)}"
            time.sleep(0.5)
        yield env, url, log
    finally:
        _stop(server)


def _scheduled_runs(url: str, deployment: str) -> list[dict[str, Any]]:
    """The runs of `deployment` that the scheduler created, soonest first."""
    found = _api(
        url,
        "/deployments/filter",
        {"deployments": {"name": {"any_": [deployment]}}},
    )
    assert len(found) == 1, f"deployment {deployment} is not on the server"
    runs = _api(
        url,
        "/flow_runs/filter",
        {
            "flow_runs": {"deployment_id": {"any_": [found[0]["id"]]}},
            "sort": "EXPECTED_START_TIME_ASC",
        },
    )
    return [run for run in runs if run["auto_scheduled"]]


def _first_final_run(url: str, deployment: str, logs: list[Path]) -> dict[str, Any]:
    deadline = time.monotonic() + DEADLINE_S
    seen: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        seen = _scheduled_runs(url, deployment)
        if seen and seen[0]["state_type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
            return seen[0]
        time.sleep(2)
    states = [run["state_name"] for run in seen] or "no run was created by the scheduler"
    raise AssertionError(
        f"no scheduled run of {deployment} finished within {DEADLINE_S:.0f} s ({states});\n"
        + "\n".join(f"--- {log.name}\n{_tail(log)}" for log in logs)
    )


def _artifacts(url: str, flow_run_id: str) -> dict[str, dict[str, Any]]:
    found = _api(url, "/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [flow_run_id]}}})
    return {artifact["key"]: artifact for artifact in found if artifact["key"]}


@pytest.mark.slow
def test_the_schedules_fire_and_their_runs_complete(
    tmp_path: Path, operator_env: tuple[dict[str, str], str, Path]
) -> None:
    env, url, server_log = operator_env
    deployments, db = _test_deployments(tmp_path)
    _prefect(env, "work-pool", "create", "tracegrade", "--type", "process")
    _prefect(env, "work-queue", "create", "writer", "--pool", "tracegrade", "--limit", "2")
    _prefect(env, "--no-prompt", "deploy", "--all", "--prefect-file", str(deployments))
    worker_log = tmp_path / "worker.log"
    worker = _start(["worker", "start", "--pool", "tracegrade"], env, worker_log, tmp_path)
    try:
        logs = [server_log, worker_log]
        nightly = _first_final_run(url, "nightly", logs)
        collect = _first_final_run(url, "judge-collect", logs)
    finally:
        _stop(worker)

    assert nightly["state_type"] == "COMPLETED", _tail(worker_log)
    artifacts = _artifacts(url, nightly["id"])
    summary = artifacts["score-traces-summary"]["data"]
    assert "completed" in summary and "| files read | 3 |" in summary
    assert "tracegrade.duckdb" in artifacts["score-traces-summary-domains"]["description"]
    report = db.with_name(db.name + ".report.html")
    assert report.exists() and str(report) in artifacts["score-traces-summary-report"]["data"]
    # no judge key in the operator's environment: the nightly judges nothing and says why
    assert "API key is missing" in artifacts["judge-traces-report"]["data"]
    con = duckdb.connect(str(db), read_only=True)
    try:
        scored = con.sql("SELECT count(*) FROM latest_scores").fetchone()
    finally:
        con.close()
    assert scored is not None and scored[0] > 0

    # the collector finds no batch on a site that never submits any: completed, with the reason
    assert collect["state_type"] == "COMPLETED", _tail(worker_log)
    note = _artifacts(url, collect["id"])["judge-collect-report"]["data"]
    assert "nothing to collect" in note
    shutil.rmtree(tmp_path / "prefect-home", ignore_errors=True)
