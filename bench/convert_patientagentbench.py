"""PatientAgentBench cases (the Whissle harness's `cases/*.json`) as chat-message records.

Used as a held-out check of derived confidence (docs/confidence.md, "Checked elsewhere"): a set
no rule was tuned on, converted with its label fixed before any level was looked at. The data
stays outside the repository. A case is a patient-facing health assistant's conversation
with a simulated patient: `transcript` (messages of role `human`, `ai` or `tool`, in order),
`tool_calls` (each with the `turn_index` of the `ai` message that made it, `name`, `args` and
`id`; the `tool` messages right after that message are their results, in order), `status`
(`scored`, or `infra_fail` when the harness failed) and `evaluation.rubric_results`: six
rubric dimensions judged 1 to 5, each with `pass`.

This writes the OpenAI layout that `tracegrade import chat` reads: a JSON array of records
with `id`, `passed` and `messages` (user, assistant with `tool_calls` as `function` objects
with JSON-string `arguments`, tool with `tool_call_id`). The label `passed` is true when every
rubric dimension passes: the run a team would accept. Cases marked `infra_fail` are left out.
Nothing else is mapped or inferred.

    python bench/convert_patientagentbench.py RESULTS_FOLDER OUT.json
    tracegrade import chat OUT.json --out traces.parquet --messages-field messages \
        --id-field id --success passed
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from _trace_files import function_call

__all__ = ["record_of_case"]

_ROLES = {"human": "user", "ai": "assistant", "tool": "tool"}


def _messages(case: dict[str, Any]) -> list[dict[str, Any]]:
    calls_at: dict[int, list[dict[str, Any]]] = {}
    for call in case.get("tool_calls") or []:
        calls_at.setdefault(call["turn_index"], []).append(call)
    messages: list[dict[str, Any]] = []
    waiting: list[str] = []  # ids of the calls whose results come next, in order
    for turn in case["transcript"]:
        role = _ROLES[turn["role"]]
        if role == "tool":
            if not waiting:
                raise ValueError(
                    f"case {case['case_id']}: tool message {turn['index']} answers no call"
                )
            messages.append(
                {"role": "tool", "tool_call_id": waiting.pop(0), "content": turn["content"]}
            )
            continue
        message: dict[str, Any] = {"role": role, "content": turn["content"]}
        calls = calls_at.get(turn["index"], []) if role == "assistant" else []
        if calls:
            message["tool_calls"] = [
                function_call(call["id"], call["name"], call["args"]) for call in calls
            ]
        waiting = [call["id"] for call in calls]
        messages.append(message)
    return messages


def record_of_case(case: dict[str, Any]) -> dict[str, Any]:
    """One scored case as a chat-message record."""
    results = case["evaluation"]["rubric_results"]
    if not results:
        raise ValueError(f"case {case['case_id']} is scored but has no rubric results")
    return {
        "id": case["case_id"],
        "passed": all(result["pass"] for result in results.values()),
        "messages": _messages(case),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="folder searched for cases/*.json")
    parser.add_argument("out", type=Path, help="JSON file of chat records to write")
    args = parser.parse_args()
    cases = [
        json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(args.results.rglob("cases/*.json"))
    ]
    records = [record_of_case(case) for case in cases if case["status"] == "scored"]
    args.out.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    print(f"{len(records)} cases -> {args.out}; {len(cases) - len(records)} not scored left out")


if __name__ == "__main__":
    main()
