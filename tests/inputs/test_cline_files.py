"""Cline-family task histories as Roo Code wrote them (tests/data/SOURCES.md: three real
`api_conversation_history.json` files, Roo Code's XML tool protocol), each scored with
`tracegrade score FILE --db DB` and no other flag. Before 2026-12-07 they were read as plain
chat: the objective was the whole first message with its `<environment_details>`, every
reply one thought with its XML in it, no tool call, no result, no failure, the answer the
last reply's raw text and the time 1970. The expectations here are read from the files with
string splits and a regular expression, not with the code under test."""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "roo-code"
TASKS = sorted(path.parent.name for path in DATA.glob("*/api_conversation_history.json"))
FILE = "api_conversation_history.json"

_TRACE = (
    "SELECT objective, result_summary, agent_id, success, created_at, "
    "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
    "  s -> s.tool_name), "
    "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content), "
    "list_transform(steps, s -> coalesce(s.content, s.input)) FROM traces"
)


def _texts(message: dict[str, Any]) -> list[str]:
    return [block["text"] for block in message["content"] if block["type"] == "text"]


def _expected(history: list[dict[str, Any]]) -> dict[str, Any]:
    """What the file says: the task, the model, the tools called (in a reply, an element at a
    line's start whose first parameter opens the next line), the refused or failed results,
    the last completion's result, the first message's time."""
    first = "\n".join(_texts(history[0]))
    every = [text for message in history for text in _texts(message)]
    calls = [
        name
        for message in history
        if message["role"] == "assistant"
        for text in _texts(message)
        for name in re.findall(r"^<([a-z_]+)>\n<", text, re.MULTILINE)
    ]
    failed = [t for t in every if t.startswith(("Tool [", "The tool execution failed"))]
    replies = "\n".join(t for m in history if m["role"] == "assistant" for t in _texts(m))
    results = replies.split("<attempt_completion>")[1:]
    return {
        "objective": first.split("<task>")[1].split("</task>")[0].strip(),
        "model": first.split("<model>")[1].split("</model>")[0].strip(),
        "calls": calls,
        "failed": failed,
        "answer": results[-1].split("<result>")[1].split("</result>")[0].strip()
        if results
        else None,
        "started": datetime.fromtimestamp(history[0]["ts"] / 1000, UTC),
    }


def test_three_real_histories_are_found() -> None:
    assert len(TASKS) == 3


@pytest.mark.parametrize("task", TASKS)
def test_each_history_is_one_trace_of_its_tool_calls(tmp_path: Path, task: str) -> None:
    history = json.loads((DATA / task / FILE).read_text())
    expected = _expected(history)
    (tmp_path / task).mkdir()
    shutil.copy(DATA / task / FILE, tmp_path / task / FILE)
    db = tmp_path / "s.duckdb"
    assert main(["score", str(tmp_path / task / FILE), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT status, rows_scored FROM files") == [("loaded", 1)]
    ((objective, answer, agent, success, created, calls, observations, contents),) = query_rows(
        db, _TRACE
    )
    assert objective == expected["objective"]
    assert (agent, success, created) == (expected["model"], None, expected["started"])
    assert calls == expected["calls"] and calls
    failed = [json.loads(o)["error"] for o in observations if o.startswith('{"error"')]
    assert failed == expected["failed"]
    if expected["answer"] is not None:
        assert answer == expected["answer"]
    # what the extension wrote around the conversation is no step
    assert not any("<environment_details>" in c or "[Response interrupted" in c for c in contents)


def test_a_refused_call_is_a_failed_call_and_the_completion_s_result_the_answer(
    tmp_path: Path,
) -> None:
    task = "8c06d62c-1ee2-4c3a-991e-c9483e90c8aa"
    shutil.copytree(DATA / task, tmp_path / task)
    db = tmp_path / "s.duckdb"
    assert main(["score", str(tmp_path / task / FILE), "--db", str(db), "--no-embedder"]) == 0
    ((calls, kinds, answer),) = query_rows(
        db,
        "SELECT list_transform(list_filter(steps, s -> s.tool_name IS NOT NULL), "
        "s -> s.tool_name), list_transform(steps, s -> s.type), result_summary FROM traces",
    )
    # write_to_file ran; attempt_completion in the same reply was refused, then called again
    assert calls == ["write_to_file", "attempt_completion", "attempt_completion"]
    assert kinds.count("error_recovery") == 1 and not answer.startswith("<")


def test_a_folder_of_tasks_reads_each_history_and_leaves_the_files_beside_it(
    tmp_path: Path,
) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(DATA, tasks)
    one = tasks / TASKS[0]
    (one / "ui_messages.json").write_text(json.dumps([{"ts": 1, "type": "say", "say": "text"}]))
    (one / "task_metadata.json").write_text(json.dumps({"files_in_context": []}))
    # the same history in another task's folder is another task
    shutil.copytree(one, tasks / "copy-of-the-first")
    db = tmp_path / "f.duckdb"
    assert main(["score", str(tasks), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT count(*), count(DISTINCT status) FROM files") == [(4, 1)]
    assert query_rows(db, "SELECT count(DISTINCT trace_id) FROM traces") == [(4,)]
    assert query_rows(db, "SELECT count(*) FROM quarantine") == [(0,)]
