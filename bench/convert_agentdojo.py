"""AgentDojo-style run files (one JSON object per run) as ReasoningTrace JSON Lines.

Used to check derived confidence on trajectories from outside ../shared (docs/confidence.md,
"Checked elsewhere"). Reads every `*.json` under a folder; the data stays outside the
repository. A run is an object with `messages` (system, user, assistant with `tool_calls` of
`function`, `args`, `id`; tool with `tool_call_id`, `content` and `error`), `user_prompt`,
`final_answer`, `pipeline_name`, `domain`, `run_id` and `evaluation.utility`.

Each assistant text is a `thought` step and each of its tool calls a `tool_call` step whose
`output_summary` is the tool message's text or, when the tool raised, `{"error": ...}`: AgentDojo
records the error apart from the content, and this keeps it apart. Nothing else is inferred
(no retries). `metadata.success` is `evaluation.utility`; derived confidence never reads it.

    python bench/convert_agentdojo.py RUNS_FOLDER OUT.jsonl
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = ["trace_of_run"]

_BASE_TIME = datetime(2026, 1, 1, tzinfo=UTC)
"""Runs carry no start time: event times are this, one second apart in sorted path order."""


def _text(content: Any) -> str:
    """The text of a message's content: a string, or the `content` of its text parts."""
    if isinstance(content, str):
        return content
    parts = content or []
    return "\n".join(p.get("content") or "" for p in parts if p.get("type") == "text")


def _results(messages: list[dict[str, Any]]) -> dict[str, str]:
    """The output_summary of every tool call id."""
    results = {}
    for message in messages:
        if message["role"] == "tool":
            error = message.get("error")
            results[message["tool_call_id"]] = (
                json.dumps({"error": error}) if error else _text(message["content"])
            )
    return results


def _steps(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    results = _results(messages)
    steps: list[dict[str, Any]] = []
    for message in messages:
        if message["role"] != "assistant":
            continue
        if _text(message["content"]).strip():
            steps.append({"type": "thought", "content": _text(message["content"])})
        for call in message.get("tool_calls") or []:
            steps.append(
                {
                    "type": "tool_call",
                    "content": "",
                    "tool": {"name": call["function"]},
                    "input": call.get("args") or {},
                    "output_summary": results.get(call["id"]),
                }
            )
    return [{"step_id": number, **step} for number, step in enumerate(steps)]


def trace_of_run(run: dict[str, Any], created_at: str) -> dict[str, Any]:
    """One run as a ReasoningTrace."""
    return {
        "id": f"agentdojo:{run['pipeline_name']}:{run['run_id']}",
        "metadata": {
            "created_at": created_at,
            "agent_id": run["pipeline_name"],
            "task_domain": run["domain"],
            "success": bool(run["evaluation"]["utility"]),
        },
        "task": {"objective": run["user_prompt"]},
        "steps": _steps(run["messages"]),
        "outcome": {"result_summary": run.get("final_answer") or "", "confidence": 1.0},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, help="folder searched for *.json run files")
    parser.add_argument("out", type=Path, help="JSON Lines file of traces to write")
    args = parser.parse_args()
    files = sorted(args.runs.rglob("*.json"))
    with args.out.open("w", encoding="utf-8") as out:
        for number, path in enumerate(files):
            run = json.loads(path.read_text(encoding="utf-8"))
            created_at = (_BASE_TIME + timedelta(seconds=number)).isoformat()
            out.write(json.dumps(trace_of_run(run, created_at), ensure_ascii=False) + "\n")
    print(f"{len(files)} runs -> {args.out}")


if __name__ == "__main__":
    main()
