"""The OpenAI Agents SDK's run items as the SDK hands them on (tests/data/openai-agents: a
weather agent's three runs, each `result.to_input_list()`: Responses API items, one run a line
and the first alone as a `.json` file, by openai-agents 0.24.0 on a fake OpenAI model) score
with no format flag as chat trajectories: the user's input the objective, the assistant's last
`message` item the answer, each `function_call` a call and its `function_call_output` the
observation, the output the SDK's default failure handling gives in place of a raising tool a
failed call. Expectations are read from the raw items here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import SESSION_SQL, query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "openai-agents"


def _expected(items: list[dict[str, Any]]) -> tuple[Any, ...]:
    answers = [
        "".join(part["text"] for part in item["content"])
        for item in items
        if item.get("type") == "message" and item["role"] == "assistant"
    ]
    outputs = [item["output"] for item in items if item.get("type") == "function_call_output"]
    return (
        next(item["content"] for item in items if item.get("role") == "user"),
        answers[-1],
        [[i["name"], i["arguments"]] for i in items if i.get("type") == "function_call"],
        [json.dumps({"error": o}) if o.startswith("An error occurred") else o for o in outputs],
    )


@pytest.mark.parametrize("name", ["runs.jsonl", "run-1.json"])
def test_each_run_is_one_trace(name: str, tmp_path: Path) -> None:
    text = (DATA / name).read_text()
    runs = (
        [json.loads(line) for line in text.splitlines()]
        if name.endswith("l")
        else [json.loads(text)]
    )
    db = tmp_path / "a.duckdb"
    assert main(["score", str(DATA / name), "--db", str(db), "--no-embedder"]) == 0
    found = [(row[0], row[1], row[4], row[5]) for row in query_rows(db, SESSION_SQL)]
    assert found == sorted(_expected(items) for items in runs)
    assert name == "run-1.json" or any('{"error"' in str(row[3]) for row in found)
