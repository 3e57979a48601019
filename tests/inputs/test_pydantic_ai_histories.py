"""pydantic-ai message histories as pydantic-ai's docs store a run (tests/data/pydantic-ai: a
weather agent's three runs on a fake OpenAI model, each `result.all_messages_json()` written to
a file and one a line, by pydantic-ai-slim 2.78.0 and 0.4.11) score with no format flag: each
history one trace, its user prompt the objective, the last model text the answer, each tool
call in order with its result as the observation, a tool that raised `ModelRetry` a failed call
(a `tool-return` whose outcome is `retried` in 2.x, a `retry-prompt` before), the model the
agent, the outcome unknown. Expectations are read from the raw histories here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import SESSION_SQL, query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "pydantic-ai"

SQL = SESSION_SQL


def _expected(history: list[dict[str, Any]]) -> tuple[Any, ...]:
    parts = [(m["kind"], p) for m in history for p in m["parts"]]
    calls = [p for kind, p in parts if p["part_kind"] == "tool-call"]
    results = [p for kind, p in parts if p["part_kind"] in ("tool-return", "retry-prompt")]
    failed = [p["part_kind"] == "retry-prompt" or p.get("outcome") == "retried" for p in results]
    return (
        next(p["content"] for kind, p in parts if p["part_kind"] == "user-prompt"),
        [p["content"] for kind, p in parts if p["part_kind"] == "text"][-1],
        next(m["model_name"] for m in history if m["kind"] == "response"),
        None,
        [
            [
                c["tool_name"],
                json.dumps(json.loads(c["args"]) if isinstance(c["args"], str) else c["args"]),
            ]
            for c in calls
        ],
        [
            json.dumps({"error": r["content"]}) if bad else r["content"]
            for r, bad in zip(results, failed, strict=True)
        ],
    )


@pytest.mark.parametrize("version", ["2.78.0", "0.4.11"])
def test_each_history_is_one_trace_as_stored(version: str, tmp_path: Path) -> None:
    histories = [
        json.loads(p.read_text()) for p in sorted(DATA.joinpath(version, "json").glob("*.json"))
    ]
    expected = sorted(_expected(history) for history in histories)
    assert sum("error" in str(row[5]) for row in expected) == 1  # the Lima run's call
    found = {}
    for given in ("json", "runs.jsonl"):
        db = tmp_path / f"{given}.duckdb"
        assert main(["score", str(DATA / version / given), "--db", str(db), "--no-embedder"]) == 0
        assert query_rows(db, SQL) == expected
        found[given] = query_rows(db, "SELECT trace_id FROM traces ORDER BY trace_id")
    # a history names the same trace whether kept as a file or as a line
    assert found["json"] == found["runs.jsonl"]


def test_a_line_that_holds_no_history_is_quarantined_with_its_reason(tmp_path: Path) -> None:
    lines = (DATA / "2.78.0" / "runs.jsonl").read_text().splitlines()
    given = tmp_path / "runs.jsonl"
    given.write_text("\n".join([lines[0], '{"kind": "request"}']) + "\n")
    db = tmp_path / "q.duckdb"
    assert main(["score", str(given), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(
        db, "SELECT rule, reason LIKE '%no pydantic-ai message history%' FROM quarantine"
    ) == [("malformed_record", True)]


def test_a_structured_output_is_the_answer_not_a_tool_call(tmp_path: Path) -> None:
    """Real histories from a public repository (tests/data/pydantic-ai/public: gemini-1.5-flash
    runs with an output type, as `all_messages_json()` printed them): pydantic-ai gives a
    structured output by calling its output tool, `final_result`, whose arguments are the
    answer; the tools the run used are its tool calls."""
    db = tmp_path / "p.duckdb"
    assert main(["score", str(DATA / "public"), "--db", str(db), "--no-embedder"]) == 0
    expected = []
    for path in sorted(DATA.joinpath("public").glob("*.json")):
        parts = [p for m in json.loads(path.read_text()) for p in m["parts"]]
        calls = [p for p in parts if p["part_kind"] == "tool-call"]
        used = [c["tool_name"] for c in calls if c["tool_name"] != "final_result"]
        output = [c["args"] for c in calls if c["tool_name"] == "final_result"][-1]
        expected.append((parts[0]["content"], json.dumps(output), used))
    found = query_rows(
        db,
        "SELECT objective, result_summary, "
        "list_transform(list_filter(steps, s -> s.type = 'tool_call'), s -> s.tool_name) "
        "FROM traces ORDER BY objective",
    )
    assert found == sorted(expected)
    assert found[1][2] == ["roll_dice", "get_player_name"]
