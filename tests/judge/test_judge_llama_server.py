"""The judge against real llama.cpp servers (llama-cpp-python's, serving Gemma 3 270M, two of
them, one per core) on 127.0.0.1, run with the commands of docs/judge.md, "Judging with a local
model", as written.

`make local-judge-test` installs the server and the model in .venv-llama and runs this module
with TRACEGRADE_LLAMA_VENV set; `make test` skips it (no server, no model)."""

from __future__ import annotations

import math
import os
import shlex
import socket
import subprocess
import time
import tomllib
import urllib.request
from pathlib import Path

import duckdb
import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = os.environ.get("TRACEGRADE_LLAMA_VENV")
RUN_LIMIT_S = 300.0

pytestmark = pytest.mark.skipif(
    not VENV, reason="needs llama-cpp-python's server and the model: make local-judge-test"
)


def documented_commands() -> list[str]:
    """The command lines of the section's shell block, in order, install line excluded."""
    text = (ROOT / "docs" / "judge.md").read_text(encoding="utf-8")
    section = text.split("## Judging with a local model", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [line.split("  #", 1)[0].strip() for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("make ")]


def wait_for_server(url: str, server: subprocess.Popen[bytes], limit_s: float = 120.0) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        assert server.poll() is None, "the llama.cpp server exited; see its output above"
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(1.0)
    raise AssertionError(f"the llama.cpp server did not answer {url} within {limit_s:.0f} s")


def run(line: str, env: dict[str, str]) -> tuple[int, str, float]:
    started = time.monotonic()
    done = subprocess.run(
        shlex.split(line),
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT_S + 60,
        check=False,
    )
    elapsed = time.monotonic() - started
    print(f"$ {line}\n{done.stdout}{done.stderr}(exit {done.returncode}, {elapsed:.1f} s)")
    return done.returncode, done.stdout + done.stderr, elapsed


def max_tokens(line: str) -> int:
    """The cap the judge command's config file sets (`[llm_default] max_tokens`)."""
    args = shlex.split(line)
    config = tomllib.loads((ROOT / args[args.index("--config") + 1]).read_text(encoding="utf-8"))
    return int(config["llm_default"]["max_tokens"])


def query(db: Path, sql: str) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def judged(db: Path) -> list[tuple[object, ...]]:
    return query(
        db, "SELECT item_id, metric, status, score, output_tokens, attempts FROM judge_results"
    )


def models_by_metric(db: Path) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for metric, model in query(db, "SELECT DISTINCT metric, model FROM judge_results"):
        found.setdefault(str(metric), set()).add(str(model))
    return found


def port(serve: str) -> int:
    args = shlex.split(serve.removesuffix("&"))
    return int(args[args.index("--port") + 1])


def test_twenty_traces_in_prompted_and_native_mode_against_llama_cpp() -> None:
    commands = documented_commands()
    serves = [line for line in commands if "llama_cpp.server" in line]
    probe, *judges = commands[len(serves) :]
    assert len(serves) == 2 and "--probe" in probe and len(judges) == 2
    ports = [port(serve) for serve in serves]
    for taken in ports:
        with socket.socket() as busy:
            assert busy.connect_ex(("127.0.0.1", taken)) != 0, f"port {taken} is taken; free it"
    env = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    for db in ROOT.glob("local-*.duckdb*"):
        db.unlink()
    servers = [
        subprocess.Popen(shlex.split(serve.removesuffix("&").strip()), cwd=ROOT) for serve in serves
    ]
    try:
        for server, served in zip(servers, ports, strict=True):
            wait_for_server(f"http://127.0.0.1:{served}/v1/models", server)
        code, output, _ = run(probe, env)
        assert code in (0, 4) and output.count("token field max_tokens") == len(servers)
        timings = []
        for line in judges:
            code, output, elapsed = run(line, env)
            assert code in (0, 4), output  # 4: some judgement is a parse_error
            timings.append(elapsed)
            db = ROOT / shlex.split(line)[shlex.split(line).index("--db") + 1]
            rows = judged(db)
            assert len(rows) == 20 * 4
            assert {row[2] for row in rows} <= {"ok", "parse_error"}, rows
            assert any(row[2] == "ok" for row in rows)
            # The metrics alternate between the two servers' endpoints.
            assert models_by_metric(db) == {
                "ClarityCoherence": {"local:gemma-270m"},
                "Coverage": {"local2:gemma-270m"},
                "Relevance": {"local:gemma-270m"},
                "LLMPlain": {"local2:gemma-270m"},
            }
            cap = max_tokens(line)
            for _, _, status, score, output_tokens, attempts in rows:
                assert attempts == 1 and 0 < int(str(output_tokens)) <= cap
                if status == "ok":
                    assert score is not None and math.isfinite(float(str(score)))
                    assert 0 <= float(str(score)) <= 100
            assert elapsed < RUN_LIMIT_S, f"{line} took {elapsed:.0f} s"
        print(f"judge runs: {', '.join(f'{t:.0f} s' for t in timings)}")
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            server.wait(timeout=30)
        for db in ROOT.glob("local-*.duckdb*"):
            db.unlink()
