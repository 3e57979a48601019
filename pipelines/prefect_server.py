"""A temporary Prefect API for runs that must be Prefect flow runs but have no API configured
(`--prefect`, or a Dask fan-out): started as a child that the kernel stops when its parent
dies, whatever signal stopped the parent, SIGKILL included.

Prefect's own temporary server stops only at a normal interpreter exit, so a scheduler's
SIGTERM or a SIGKILL left it running; this one cannot outlive the command that started it.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipelines.errors import PrefectServerError

__all__ = ["temporary_prefect_api"]

_PR_SET_PDEATHSIG = 1
_STARTUP_S = 120.0
_DRAIN_S = 10.0
"""How long the workers may take to send what they hold before the server stops."""


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Ask the kernel to SIGKILL this process when the process that started it dies."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _server(port: int) -> subprocess.Popen[bytes]:
    """The Prefect API app under uvicorn on 127.0.0.1:`port`, as Prefect runs it itself."""
    spec = importlib.util.find_spec("prefect")  # not imported: it reads its settings once
    if spec is None or spec.origin is None:
        raise PrefectServerError("Prefect is not installed; install the project with make install")
    env = {
        **os.environ,
        "PREFECT_UI_ENABLED": "0",
        "PREFECT__SERVER_EPHEMERAL": "1",
        "PREFECT__SERVER_FINAL": "1",
    }
    env.pop("PREFECT_API_URL", None)
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "--app-dir",
        str(Path(spec.origin).parent.parent),
        "--factory",
        "prefect.server.api.server:create_app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "error",
        "--lifespan",
        "on",
    ]
    return subprocess.Popen(
        command,
        env=env,
        stdin=subprocess.DEVNULL,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,  # noqa: PLW1509
    )


def _drain_workers() -> None:
    """Send the logs and events Prefect's background workers still hold while the server is
    there to take them: at interpreter exit it is gone, and each batch left ends as "Error
    logging to API" after a run that succeeded."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        worker.drain_all(timeout=_DRAIN_S, at_exit=False)


@contextmanager
def temporary_prefect_api() -> Iterator[str]:
    """A Prefect API on 127.0.0.1 for the duration of the block; yields its URL and sets
    PREFECT_API_URL so that flows in this process use it.

    Raises:
        PrefectServerError: the server did not answer within two minutes.
    """
    port = _free_port()
    url = f"http://127.0.0.1:{port}/api"
    process = _server(port)
    try:
        deadline = time.monotonic() + _STARTUP_S
        while not _healthy(url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise PrefectServerError(
                    f"the temporary Prefect server did not start (exit status "
                    f"{process.poll()}); set PREFECT_API_URL to a running Prefect server"
                )
            time.sleep(0.1)
        previous = os.environ.get("PREFECT_API_URL")
        os.environ["PREFECT_API_URL"] = url
        try:
            yield url
        finally:
            if previous is None:
                os.environ.pop("PREFECT_API_URL", None)
            else:
                os.environ["PREFECT_API_URL"] = previous
    finally:
        _drain_workers()
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
