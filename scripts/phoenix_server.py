"""A real Phoenix server on 127.0.0.1, from the virtual environment `make phoenix` builds
(.venv-phoenix): started, waited for, stopped. Used by tests/phoenix/test_phoenix_server.py and
bench/bench_phoenix.py."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

__all__ = ["STARTUP_S", "free_port", "phoenix_serving"]

STARTUP_S = 240.0
"""A first start migrates Phoenix's SQLite database (about 25 s on 2 busy cores)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def phoenix_serving(venv: Path, home: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    """`phoenix serve` with its SQLite database in `home`, on 127.0.0.1:`port`, until the block
    ends (or the test stops it itself)."""
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(home),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (home / "phoenix.log").open("ab")
    server = subprocess.Popen(
        [str(venv / "bin" / "phoenix"), "serve"], env=env, stdout=log, stderr=log
    )
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"Phoenix did not start: {(home / 'phoenix.log').read_text()[-2000:]}"
                )
            time.sleep(0.5)
        yield server
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
