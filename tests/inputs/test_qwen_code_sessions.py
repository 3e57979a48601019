"""Qwen Code session logs as the CLI writes them (tests/data/qwen-code: three sessions of
`qwen -p ... --yolo`, recorded by Qwen Code 0.15.10 against a stand-in OpenAI chat API) score
with no format flag, not as Claude Code transcripts (their events look alike, but hold Gemini
parts): each session one trace, the prompt its objective, the last model text its answer, each
`functionCall` in order with its `functionResponse` as the observation, a call whose
`toolCallResult` status is `error` a failed one, the model the agent, the outcome unknown.
Expectations are read from the raw events here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import SESSION_SQL, query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "qwen-code"


def _expected(path: Path) -> tuple[Any, ...]:
    events = [json.loads(line) for line in path.read_text().splitlines()]
    parts = {e["type"]: [] for e in events}
    for event in events:
        parts[event["type"]].extend(event.get("message", {}).get("parts", []))
    calls = [p["functionCall"] for p in parts["assistant"] if "functionCall" in p]
    results = [e for e in events if e["type"] == "tool_result"]
    observed = []
    for event in results:
        response = event["message"]["parts"][0]["functionResponse"]["response"]
        text = response.get("output", response.get("error"))
        failed = event["toolCallResult"]["status"] == "error"
        observed.append(json.dumps({"error": text}) if failed else text)
    return (
        parts["user"][0]["text"],
        [p["text"] for p in parts["assistant"] if "text" in p][-1],
        next(e["model"] for e in events if e["type"] == "assistant"),
        None,
        [[c["name"], json.dumps(c["args"])] for c in calls],
        observed,
    )


def test_each_session_is_one_trace_as_recorded(tmp_path: Path) -> None:
    db = tmp_path / "q.duckdb"
    assert main(["score", str(DATA), "--db", str(db), "--no-embedder"]) == 0
    expected = sorted(_expected(path) for path in DATA.glob("*.jsonl"))
    assert query_rows(db, SESSION_SQL) == expected
    assert sum('{"error"' in str(row[5]) for row in expected) == 1
