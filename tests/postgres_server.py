"""A PostgreSQL server on 127.0.0.1 for a test (Debian's `postgresql` package), which the test
may stop and start again; as root it runs as the `postgres` user (the server refuses root)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

__all__ = ["PostgresServer"]


def _postgres_bin(name: str) -> str:
    found = shutil.which(name) or next(
        (str(p) for p in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))), None
    )
    if found is None:
        pytest.skip(
            f"{name} not found: PostgreSQL is not installed (make test installs Debian's "
            "postgresql when run as root; or apt-get install postgresql)"
        )
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresServer:
    """`start()` it (a new data folder the first time), `stop()` it, `close()` when done."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="tg-pg-"))
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.data, self.port = self.folder / "data", _free_port()
        self.dsn = f"dbname=postgres user=tg host=127.0.0.1 port={self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        subprocess.run(
            [
                *self.as_user,
                _postgres_bin("initdb"),
                "-D",
                str(self.data),
                "-A",
                "trust",
                "-U",
                "tg",
            ],
            check=True,
            capture_output=True,
        )

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                *self.as_user,
                _postgres_bin("postgres"),
                "-D",
                str(self.data),
                "-p",
                str(self.port),
                "-h",
                "127.0.0.1",
                "-k",
                str(self.folder),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        ready = [_postgres_bin("pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)]
        while subprocess.run(ready, capture_output=True).returncode != 0:
            assert time.monotonic() < deadline and self.process.poll() is None, "no postgres"
            time.sleep(0.2)

    def stop(self, immediately: bool = False) -> None:
        """Stop the server: at once, as a crash would (SIGQUIT), or cleanly (SIGTERM)."""
        if self.process is not None and self.process.poll() is None:
            # the postmaster itself: `runuser` above it passes on no signal but SIGTERM
            pid_file = self.data / "postmaster.pid"
            pid = int(pid_file.read_text().split()[0]) if pid_file.exists() else self.process.pid
            os.kill(pid, signal.SIGQUIT if immediately else signal.SIGTERM)
            self.process.wait(timeout=30)
        self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
