"""AgentClinic cases (the Whissle harness's `cases/*.json`) as ReasoningTrace JSON Lines.

Used to check derived confidence on multi-turn trajectories from outside ../shared
(docs/confidence.md, "Checked elsewhere"). Reads every `cases/*.json` under a folder; the data
stays outside the repository. A case is a doctor agent's dialogue with a simulated patient:
`doctor_turns` (each the agent's `reply`, its `kind`: question, test or diagnosis, the test
requested as `payload`, and the `incoming` text it answered), `score.correctness` (the
diagnosis matched), `score.doctor_final_text`, `infra_fail` and the run's provenance.

Each doctor reply is a `thought` step; a test request is then also a `tool_call` step of tool
`request_test` (input: the request) whose `output_summary` is the measurement the next turn
received. The patient's replies are not steps, as `tracegrade import chat` leaves out later
user turns: a trace holds what the agent did. The objective is empty (a case records no task
text); the final answer is the doctor's final text. Cases the harness marks `infra_fail` are
left out. `metadata.success` is `score.correctness`; derived confidence never reads it.

    python bench/convert_agentclinic.py RESULTS_FOLDER OUT.jsonl
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from _trace_files import write_traces

__all__ = ["trace_of_case"]


def _steps(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for number, turn in enumerate(turns):
        steps.append({"step_id": len(steps), "type": "thought", "content": turn["reply"] or ""})
        if turn["kind"] == "test":
            answered = turns[number + 1]["incoming"] if number + 1 < len(turns) else None
            steps.append(
                {
                    "step_id": len(steps),
                    "type": "tool_call",
                    "content": "",
                    "tool": {"name": "request_test"},
                    "input": {"request": turn["payload"]},
                    "output_summary": answered,
                }
            )
    return steps


def trace_of_case(case: dict[str, Any], run: str) -> dict[str, Any]:
    """One case of the run folder `run` as a ReasoningTrace."""
    provenance = case["diagnostics"]["provenance"]
    turns = case["doctor_turns"]
    final = case["score"].get("doctor_final_text") or (turns[-1]["reply"] if turns else "")
    return {
        "id": f"agentclinic:{run}:{case['scenario_id']}",
        "metadata": {
            "created_at": provenance["captured_at"],
            "agent_id": run.rsplit("-", 1)[-1],
            "task_domain": "agentclinic",
            "success": bool(case["score"].get("correctness")),
        },
        "task": {"objective": ""},
        "steps": _steps(turns),
        "outcome": {"result_summary": final or "", "confidence": 1.0},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+", help="folders searched for cases/*.json")
    parser.add_argument("out", type=Path, help="JSON Lines file of traces to write")
    args = parser.parse_args()
    paths = [path for folder in args.results for path in sorted(folder.rglob("cases/*.json"))]
    written, left_out = write_traces(
        paths,
        lambda case, path: (
            None if case.get("infra_fail") else trace_of_case(case, path.parent.parent.name)
        ),
        args.out,
    )
    print(f"{written} cases -> {args.out}; {left_out} infra_fail left out")


if __name__ == "__main__":
    main()
