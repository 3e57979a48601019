"""The commands of docs/judge.md, "Judging with a local model", as written: the llama.cpp
servers started and waited for, then the probe and the judge lines run one after another.

`tests/judge/test_judge_llama_server.py` checks what the runs leave in DuckDB;
`bench/bench_local_judge.py` times them. Both need `make local-judge` (.venv-llama).
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Documented:
    serves: list[str]
    probe: str
    judges: list[str]


def documented_commands() -> Documented:
    """The command lines of the section's shell block, in order, `make` lines left out."""
    text = (ROOT / "docs" / "judge.md").read_text(encoding="utf-8")
    section = text.split("## Judging with a local model", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    stripped = [line.split("  #", 1)[0].strip() for line in block.splitlines()]
    lines = [line for line in stripped if line and not line.startswith("make ")]
    serves = [line for line in lines if "llama_cpp.server" in line]
    probe, *judges = lines[len(serves) :]
    return Documented(serves, probe, judges)


def port(serve: str) -> int:
    args = shlex.split(serve.removesuffix("&"))
    return int(args[args.index("--port") + 1])


def option(line: str, name: str) -> str:
    """The value after `name` in a command line (`--db`, `--config`)."""
    args = shlex.split(line)
    return args[args.index(name) + 1]


def _wait_for_server(url: str, server: subprocess.Popen[bytes], limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError("the llama.cpp server exited; see its output above")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(1.0)
    raise RuntimeError(f"the llama.cpp server did not answer {url} within {limit_s:.0f} s")


def remove_databases() -> None:
    for db in ROOT.glob("local-*.duckdb*"):
        db.unlink()


@contextmanager
def servers_running(serves: list[str], limit_s: float = 120.0) -> Iterator[None]:
    """The documented servers, started from the repository root and answering; the local-*
    databases the judge lines write are removed before and after."""
    for taken in map(port, serves):
        with socket.socket() as busy:
            if busy.connect_ex(("127.0.0.1", taken)) == 0:
                raise RuntimeError(f"port {taken} is taken; free it")
    remove_databases()
    started = [
        subprocess.Popen(shlex.split(serve.removesuffix("&").strip()), cwd=ROOT) for serve in serves
    ]
    try:
        for server, served in zip(started, map(port, serves), strict=True):
            _wait_for_server(f"http://127.0.0.1:{served}/v1/models", server, limit_s)
        yield
    finally:
        for server in started:
            server.terminate()
        for server in started:
            server.wait(timeout=30)
        remove_databases()


def run(line: str, limit_s: float) -> tuple[int, str, float]:
    """Runs one documented tracegrade line with the project's .venv first on PATH: exit
    status, stdout and stderr together, seconds. `limit_s` only stops a hung run."""
    env = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    started = time.monotonic()
    done = subprocess.run(
        shlex.split(line),
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=limit_s,
        check=False,
    )
    elapsed = time.monotonic() - started
    print(f"$ {line}\n{done.stdout}{done.stderr}(exit {done.returncode}, {elapsed:.1f} s)")
    return done.returncode, done.stdout + done.stderr, elapsed
