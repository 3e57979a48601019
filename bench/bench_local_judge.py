"""bench_local_judge: the judge on local llama.cpp servers, run with the commands of docs/judge.md
("Judging with a local model") as written: seconds for each 20-answer run (four metrics, in
prompted and in native mode) beside the five minutes that issue 14 names as the limit.

Needs `make local-judge` (llama-cpp-python's server and Gemma 3 270M in .venv-llama). The
correctness of the same runs (every judgement ok or parse_error, no reply over the cap, each
metric on its own server) is tests/judge/test_judge_llama_server.py's subject; it times
nothing.

Run: .venv/bin/python bench/bench_local_judge.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import duckdb
from _common import Check, add_common_args, begin, end, print_table, save_result, short_machine

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

import local_judge  # noqa: E402

LIMIT_S = 300.0
"""Issue 14: a 20-answer run with the four metrics takes under 5 minutes."""
HUNG_S = 900.0


def statuses(line: str) -> dict[str, int]:
    con = duckdb.connect(str(ROOT / local_judge.option(line, "--db")), read_only=True)
    try:
        rows = con.execute("SELECT status, count(*) FROM judge_results GROUP BY ALL").fetchall()
    finally:
        con.close()
    return {str(status): int(count) for status, count in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common_args(parser)
    args = parser.parse_args()
    if not (ROOT / ".venv-llama" / ".installed").exists():
        sys.exit("bench_local_judge needs the server and the model: run `make local-judge`")
    info, load = begin("local judge: the documented llama.cpp runs against 5 minutes", args)
    commands = local_judge.documented_commands()
    checks: list[Check] = []
    runs: list[dict[str, object]] = []
    with local_judge.servers_running(commands.serves):
        local_judge.run(commands.probe, HUNG_S)
        for line in commands.judges:
            code, _, seconds = local_judge.run(line, HUNG_S)
            counts = statuses(line)
            mode = "prompted" if "prompted" in local_judge.option(line, "--config") else "native"
            runs.append({"line": line, "exit": code, "seconds": seconds, "statuses": counts})
            checks.append(
                Check(
                    f"{mode} run, 20 answers x 4 metrics ({counts})",
                    f"{seconds:.0f} s",
                    f"{LIMIT_S:.0f} s (issue 14's limit)",
                    f"{seconds / LIMIT_S:.2f}",
                    f"< {LIMIT_S:.0f} s",
                    seconds < LIMIT_S,
                )
            )
    end(info, load)
    print_table(checks, short_machine(info))
    save_result("bench_local_judge", {"machine": info, "runs": runs})


if __name__ == "__main__":
    main()
