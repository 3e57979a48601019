"""A LangGraph state's messages as LangChain serialises them (tests/data/SOURCES.md: a real
LangGraph.js ReAct agent's final state, `dumpd`), scored with `tracegrade score FILE --db DB`
and no other flag; and the same messages as `messages_to_dict` writes them. Before
2026-12-07 both were one `unrecognised_file` line. The expectations are read from the file
here with `json`, not with the code under test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "langgraph" / "react-agent-state.json"

_TRACE = (
    "SELECT objective, result_summary, "
    "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
    "  s -> [s.tool_name, s.input]), "
    "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content) "
    "FROM traces"
)


def _expected(state: dict[str, Any]) -> tuple[Any, ...]:
    fields = [(m["id"][-1], m["kwargs"]) for m in state["messages"]]
    calls = [c for kind, f in fields if kind == "AIMessageChunk" for c in f["tool_calls"]]
    last = fields[-1][1]["content"]
    return (
        fields[0][1]["content"],
        "\n".join(part["text"] for part in last),
        [[c["name"], json.dumps(c["args"], sort_keys=True, separators=(",", ":"))] for c in calls],
        [f["content"] for kind, f in fields if kind == "ToolMessage"],
    )


def _score(path: Path, tmp_path: Path) -> tuple[Any, ...]:
    db = tmp_path / f"{path.stem}.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    (row,) = query_rows(db, _TRACE)
    return tuple(row)


def test_a_langgraph_state_is_its_calls_and_results(tmp_path: Path) -> None:
    state = json.loads(DATA.read_text())
    shutil.copy(DATA, tmp_path / DATA.name)
    expected = _expected(state)
    assert _score(tmp_path / DATA.name, tmp_path) == expected and len(expected[2]) == 2
    # the same messages as `messages_to_dict` writes them, a failed call among them
    kinds = {"HumanMessage": "human", "AIMessageChunk": "ai", "ToolMessage": "tool"}
    listed = [{"type": kinds[m["id"][-1]], "data": m["kwargs"]} for m in state["messages"]]
    listed[2]["data"] = {**listed[2]["data"], "status": "error"}
    path = tmp_path / "history.json"
    path.write_text(json.dumps(listed))
    objective, answer, calls, results = _score(path, tmp_path)
    assert (objective, answer, calls) == expected[:3]
    assert json.loads(results[0]) == {"error": expected[3][0]} and results[1] == expected[3][1]


def test_a_streamed_chunk_and_an_older_dump_s_calls(tmp_path: Path) -> None:
    state = json.loads(DATA.read_text())
    expected = _expected(state)
    kinds = {"HumanMessage": "human", "AIMessageChunk": "AIMessageChunk", "ToolMessage": "tool"}
    listed = [{"type": kinds[m["id"][-1]], "data": dict(m["kwargs"])} for m in state["messages"]]
    # an older langchain-core keeps the provider's calls only, in OpenAI's shape
    ai = listed[1]["data"]
    ai["additional_kwargs"] = {
        "tool_calls": [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["args"])},
            }
            for c in ai.pop("tool_calls")
        ]
    }
    path = tmp_path / "chunks.json"
    path.write_text(json.dumps(listed))
    objective, answer, calls, results = _score(path, tmp_path)
    assert (objective, answer, results) == (expected[0], expected[1], expected[3])
    assert [name for name, _ in calls] == [name for name, _ in expected[2]]
