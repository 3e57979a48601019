"""MedAgentBench task results (the Whissle adapter's `tasks/*.json`) as ReasoningTrace JSON Lines.

Used to check derived confidence on trajectories from outside ../shared (docs/confidence.md,
"Checked elsewhere"). Reads every `tasks/*.json` under a folder; the data stays outside the
repository. A task result has `task_id`, `instruction`, `result`, `correct`, `infra_fail`,
`diagnostics.provenance` (`model`, `captured_at`) and `turns`: each the agent's reply parsed
as an `action_kind` (get, post, finish, invalid) with the `url`, `payload` and the
environment's `observation`.

A get or post turn is a `tool_call` step of tool `get` / `post` (input: url and payload) whose
`output_summary` is the observation, as the agent read it; a finish or invalid turn is a
`thought` step with the agent's reply. Results the harness marks `infra_fail` (the agent's
endpoint failed, not the agent) are left out. `metadata.success` is `correct`; derived
confidence never reads it.

    python bench/convert_medagentbench.py RESULTS_FOLDER OUT.jsonl
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from _trace_files import write_traces

__all__ = ["trace_of_task"]

_CALLS = ("get", "post")


def _step(number: int, turn: dict[str, Any]) -> dict[str, Any]:
    if turn["action_kind"] in _CALLS:
        return {
            "step_id": number,
            "type": "tool_call",
            "content": "",
            "tool": {"name": turn["action_kind"]},
            "input": {"url": turn["url"], "payload": turn["payload"]},
            "output_summary": turn["observation"],
            "latency_ms": turn.get("latency_ms"),
        }
    return {
        "step_id": number,
        "type": "thought",
        "content": turn["agent_reply"] or "",
        "latency_ms": turn.get("latency_ms"),
    }


def trace_of_task(task: dict[str, Any], run: str) -> dict[str, Any]:
    """One task result of the run folder `run` as a ReasoningTrace."""
    provenance = task["diagnostics"]["provenance"]
    model = provenance["model"]
    agent = "whissle-default-model" if model.startswith("(") else model
    return {
        "id": f"medagentbench:{run}:{task['task_id']}",
        "metadata": {
            "created_at": provenance["captured_at"],
            "agent_id": agent,
            "task_domain": "medagentbench",
            "success": bool(task["correct"]),
        },
        "task": {"objective": task["instruction"]},
        "steps": [_step(number, turn) for number, turn in enumerate(task["turns"])],
        "outcome": {"result_summary": task.get("result") or "", "confidence": 1.0},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="folder searched for */tasks/*.json")
    parser.add_argument("out", type=Path, help="JSON Lines file of traces to write")
    args = parser.parse_args()
    written, left_out = write_traces(
        sorted(args.results.rglob("tasks/*.json")),
        lambda task, path: (
            None if task["infra_fail"] else trace_of_task(task, path.parent.parent.name)
        ),
        args.out,
    )
    print(f"{written} task results -> {args.out}; {left_out} infra_fail left out")


if __name__ == "__main__":
    main()
