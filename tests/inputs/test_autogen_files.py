"""AutoGen runs as AutoGen saved them (tests/data/SOURCES.md: an AgentChat 0.4.7 team's saved
state and the same run's messages, and a Core sample's model context), each scored with
`tracegrade score FILE --db DB` and no other flag. Before 2026-12-07 each was one
`unrecognised_file` line. The expectations are read from the files here with `json`, not with
the code under test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "autogen"

_TRACE = (
    "SELECT objective, result_summary, agent_id, success, created_at, "
    "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
    "  s -> [s.tool_name, s.input]), "
    "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content), "
    "list_transform(list_filter(steps, s -> s.type = 'thought'), s -> s.content) FROM traces"
)


def _score(path: Path, tmp_path: Path) -> tuple[Any, ...]:
    db = tmp_path / f"{path.stem}.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT status, rows_scored FROM files") == [("loaded", 1)]
    (row,) = query_rows(db, _TRACE)
    return tuple(row)


def _thread(document: Any) -> list[dict[str, Any]]:
    if isinstance(document, list):
        return document
    states = document["agent_states"].values()
    return next(state["message_thread"] for state in states if "message_thread" in state)


def _expected_agentchat(thread: list[dict[str, Any]]) -> dict[str, Any]:
    spoken = [m for m in thread if m["type"] == "TextMessage" and m["source"] != "user"]
    return {
        "objective": next(m["content"] for m in thread if m["source"] == "user"),
        "answer": spoken[-1]["content"],
        "calls": [
            [call["name"], call["arguments"]]
            for m in thread
            if m["type"] == "ToolCallRequestEvent"
            for call in m["content"]
        ],
        "results": [
            result["content"]
            for m in thread
            if m["type"] == "ToolCallExecutionEvent"
            for result in m["content"]
        ],
        "thoughts": [m["content"] for m in spoken],
    }


@pytest.mark.parametrize("name", ["team_state.json", "team_history.json"])
def test_an_agentchat_team_s_run_is_one_trace(tmp_path: Path, name: str) -> None:
    shutil.copy(DATA / name, tmp_path / name)
    expected = _expected_agentchat(_thread(json.loads((DATA / name).read_text())))
    objective, answer, agent, success, _, calls, results, thoughts = _score(
        tmp_path / name, tmp_path
    )
    assert objective == expected["objective"] and answer == expected["answer"]
    assert calls == expected["calls"] and len(calls) == 2
    assert results == expected["results"] and thoughts == expected["thoughts"]
    # three agents spoke: the team names no one agent; AutoGen records no outcome
    assert (agent, success) == (None, None)


def test_a_core_model_context_is_one_trace(tmp_path: Path) -> None:
    name = "history-wile_e_coyote_1.json"
    shutil.copy(DATA / name, tmp_path / name)
    messages = json.loads((DATA / name).read_text())["messages"]
    objective, answer, agent, _, _, calls, results, _ = _score(tmp_path / name, tmp_path)
    said = [m for m in messages if m["type"] == "AssistantMessage"]
    assert objective == next(m["content"] for m in messages if m["type"] == "UserMessage")
    assert answer == said[-1]["content"]
    assert calls == [
        [c["name"], c["arguments"]]
        for m in said
        if isinstance(m["content"], list)
        for c in m["content"]
    ]
    assert results == [
        r["content"]
        for m in messages
        if m["type"] == "FunctionExecutionResultMessage"
        for r in m["content"]
    ]
    assert agent is None  # TriageAgent handed over to IssuesAndRepairsAgent


def test_a_later_run_s_times_one_agent_and_a_failed_call(tmp_path: Path) -> None:
    # AgentChat 0.5 on stamps each message with `created_at`; one agent alone names the run
    thread = [
        m
        for m in json.loads((DATA / "team_history.json").read_text())
        if m["source"] in ("user", "github")
    ]
    for number, message in enumerate(thread):
        message["created_at"] = f"2025-06-01T10:00:{number:02d}.000000Z"
    execution = next(m for m in thread if m["type"] == "ToolCallExecutionEvent")
    execution["content"][0]["is_error"] = True
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"messages": thread, "stop_reason": "Maximum number of turns"}))
    _, _, agent, _, created, _, results, _ = _score(path, tmp_path)
    assert agent == "github"
    assert created.isoformat() == "2025-06-01T10:00:00+00:00"
    assert json.loads(results[0]) == {"error": execution["content"][0]["content"]}


def test_an_agent_s_last_response_is_the_answer_whatever_its_kind(tmp_path: Path) -> None:
    thread = [
        m
        for m in json.loads((DATA / "team_history.json").read_text())
        if m["source"] in ("user", "github")
    ]
    # an agent that does not reflect on its calls responds with their results (0.4's default)
    summary = next(m for m in reversed(thread) if m["type"] == "ToolCallSummaryMessage")
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(thread[: thread.index(summary) + 1]))
    _, answer, *_ = _score(path, tmp_path)
    assert answer == summary["content"]
    # a structured final output (AgentChat 0.5's `output_content_type`)
    structured = {
        "source": "github",
        "models_usage": None,
        "content": {"repository": "time-tracking-fullstack", "commits": 0},
        "type": "StructuredMessage[CommitCount]",
    }
    path = tmp_path / "structured.json"
    path.write_text(json.dumps([*thread, structured]))
    _, answer, _, _, _, _, _, thoughts = _score(path, tmp_path)
    assert json.loads(answer) == structured["content"] and thoughts[-1] == answer


def test_a_message_of_no_known_type_is_no_crash(tmp_path: Path) -> None:
    odd = tmp_path / "odd.json"  # a type that is no text: no AutoGen run at all
    odd.write_text(json.dumps([{"type": {"kind": "x"}, "content": "hello", "source": "y"}]))
    db = tmp_path / "odd.duckdb"
    assert main(["score", str(odd), "--db", str(db), "--no-embedder"]) == 1
    assert query_rows(db, "SELECT rule FROM files") == [("unrecognised_file",)]
    thread = json.loads((DATA / "team_history.json").read_text())
    thread[3]["type"] = ["TextMessage"]  # inside a run: that run is rejected with its reason
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(thread))
    db = tmp_path / "broken.duckdb"
    assert main(["score", str(broken), "--db", str(db), "--no-embedder"]) == 1
    ((rule, reason),) = query_rows(db, "SELECT rule, reason FROM quarantine")
    assert rule == "malformed_record" and "message 4" in reason
