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


def _history(task: str = "d6a6a99a-b7fd-41fc-86ce-2f17c9520437") -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = json.loads((DATA / task / FILE).read_text())
    return history


def _block(history: list[dict[str, Any]], starts: str) -> dict[str, Any]:
    """The first text block that opens with `starts`."""
    return next(
        block
        for message in history
        for block in message["content"]
        if block["type"] == "text" and block["text"].startswith(starts)
    )


def _score_history(tmp_path: Path, history: Any, name: str = FILE) -> tuple[Any, ...]:
    folder = tmp_path / "task"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(json.dumps(history))
    db = tmp_path / f"{len(list(tmp_path.iterdir()))}.duckdb"
    assert main(["score", str(folder / name), "--db", str(db), "--no-embedder"]) == 0
    (row,) = query_rows(
        db,
        "SELECT list_transform(list_filter(steps, s -> s.tool_name IS NOT NULL), "
        "s -> [s.tool_name, s.input]), "
        "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content), "
        "list_transform(list_filter(steps, s -> s.type = 'thought'), s -> s.content), trace_id "
        "FROM traces",
    )
    return tuple(row)


def test_a_file_s_text_that_holds_a_closing_tag_stays_in_the_call(tmp_path: Path) -> None:
    # a file written whose text holds `</write_to_file>` (a rules file quoting the protocol)
    history = _history()
    reply = _block(history, "Créons une version améliorée avec des logs")
    quoted = "# the tool closes with </write_to_file>\n"
    reply["text"] = reply["text"].replace("<content>\n", "<content>\n" + quoted, 1)
    # and a tool named in prose before the real call: no call
    first = _block(history, "Je vais analyser le validateur")
    first["text"] = "I'll use the <read_file> tool first.\n" + first["text"]
    calls, _, thoughts, _ = _score_history(tmp_path, history)
    written = [json.loads(arguments) for name, arguments in calls if name == "write_to_file"]
    assert written[0]["content"].startswith(quoted.strip())
    assert not any("</content>" in thought for thought in thoughts)
    assert json.loads(calls[0][1])["args"].startswith("<file>") and calls[0][0] == "read_file"
    assert thoughts[0].startswith("I'll use the <read_file> tool first.")


def test_results_the_extension_says_failed_are_failed_calls(tmp_path: Path) -> None:
    history = _history()
    ran = _block(history, "Command executed in terminal")
    ran["text"] = ran["text"].replace("Exit code: 0", "Exit code: 1", 1)
    todo = _block(history, "Todo list updated successfully.")
    todo["text"] = "The user denied this operation."
    files = _block(history, "<files>")  # a result that quotes the extension's tag
    files["text"] = files["text"].replace("\n", "\nsee <environment_details> below\n", 1)
    _, observations, _, _ = _score_history(tmp_path, history)
    failed = [json.loads(o)["error"] for o in observations if o.startswith('{"error"')]
    assert failed == [todo["text"], ran["text"].strip()]
    assert any("see <environment_details> below" in o for o in observations)


def test_a_history_of_another_name_is_known_by_its_content(tmp_path: Path) -> None:
    history = _history()
    *_, one = _score_history(tmp_path, history, "history.json")
    *_, again = _score_history(tmp_path, history, "copy.json")
    history[-1]["content"][0]["text"] += " "
    *_, other = _score_history(tmp_path, history, "other.json")
    assert one == again != other


def test_a_single_message_is_quarantined_not_a_crash(tmp_path: Path) -> None:
    folder = tmp_path / "tasks" / "t1"
    folder.mkdir(parents=True)
    first = _history()[0]
    (folder / FILE).write_text(json.dumps(first))  # an object, not the array Cline writes
    db = tmp_path / "q.duckdb"
    assert main(["score", str(folder / FILE), "--db", str(db), "--no-embedder"]) == 1
    ((status, reason),) = query_rows(db, "SELECT status, reason FROM files")
    assert status == "quarantined" and "not a Cline task history" in reason
