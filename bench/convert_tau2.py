"""A tau2-bench results file (`simulations` with their messages) as chat-message records.

Used to check derived confidence on trajectories from outside ../shared (docs/confidence.md,
"Checked elsewhere"); the data stays outside the repository. tau2-bench writes one JSON object
with `simulations`, each with `id`, `task_id`, `trial`, `reward_info.reward` and `messages`
(assistant messages with `tool_calls` of `id`, `name` and `arguments` as an object; tool
messages with the call's `id` and the result as `content`). This writes them as the OpenAI
layout that `tracegrade import chat` reads: a JSON array of records with `id`, `task_id`,
`trial`, `reward` and `messages`, tool calls as `function` objects with JSON-string
`arguments`, tool messages with `tool_call_id`. Nothing else is mapped or inferred.

    python bench/convert_tau2.py RESULTS.json OUT.json
    tracegrade import chat OUT.json --out traces.parquet --messages-field messages --id-field id
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from _trace_files import function_call

__all__ = ["record_of_simulation"]


def _message(message: dict[str, Any]) -> dict[str, Any]:
    role = message["role"]
    if role == "tool":
        return {"role": "tool", "tool_call_id": message["id"], "content": message.get("content")}
    out = {"role": role, "content": message.get("content")}
    calls = message.get("tool_calls") if role == "assistant" else None
    if calls:
        out["tool_calls"] = [
            function_call(call["id"], call["name"], call["arguments"]) for call in calls
        ]
    return out


def record_of_simulation(simulation: dict[str, Any]) -> dict[str, Any]:
    """One simulation as a chat-message record."""
    return {
        "id": simulation["id"],
        "task_id": simulation["task_id"],
        "trial": simulation["trial"],
        "reward": simulation["reward_info"]["reward"],
        "messages": [_message(m) for m in simulation["messages"]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a tau2-bench results JSON file")
    parser.add_argument("out", type=Path, help="JSON file of chat records to write")
    args = parser.parse_args()
    simulations = json.loads(args.results.read_text(encoding="utf-8"))["simulations"]
    records = [record_of_simulation(s) for s in simulations]
    args.out.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    print(f"{len(records)} simulations -> {args.out}")


if __name__ == "__main__":
    main()
