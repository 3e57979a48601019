"""A Continue session as Continue's CLI saves it (tests/data/SOURCES.md: a real session),
scored with `tracegrade score FILE --db DB` and no other flag. Before 2026-12-07 it was one
`unrecognised_file` line. The expectations are read from the file here with `json`, not with
the code under test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from conftest import query_rows

from tracegrade.cli import main

DATA = (
    Path(__file__).resolve().parents[1] / "data" / "continue" / "continue-cli-session-simple.json"
)

_TRACE = (
    "SELECT objective, result_summary, "
    "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
    "  s -> [s.tool_name, s.input]), "
    "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content) "
    "FROM traces"
)


def _score(path: Path, tmp_path: Path) -> tuple[Any, ...]:
    db = tmp_path / f"{path.stem}.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    (row,) = query_rows(db, _TRACE)
    return tuple(row)


def test_a_session_is_its_calls_and_their_states_outputs(tmp_path: Path) -> None:
    session = json.loads(DATA.read_text())
    shutil.copy(DATA, tmp_path / DATA.name)
    objective, answer, calls, results = _score(tmp_path / DATA.name, tmp_path)
    messages = [item["message"] for item in session["history"]]
    states = [s for item in session["history"] for s in item.get("toolCallStates", [])]
    assert objective == messages[0]["content"] and answer == messages[-1]["content"]
    assert calls == [
        [c["function"]["name"], c["function"]["arguments"]]
        for m in messages
        for c in m.get("toolCalls", [])
    ]
    assert results == ["\n".join(o["content"] for o in s["output"]) for s in states]
    assert len(calls) == 2


def test_a_call_that_errored_is_a_failed_call(tmp_path: Path) -> None:
    session = json.loads(DATA.read_text())
    state = session["history"][1]["toolCallStates"][0]
    state["status"] = "errored"
    path = tmp_path / "errored.json"
    path.write_text(json.dumps(session))
    *_, results = _score(path, tmp_path)
    assert json.loads(results[0]) == {"error": state["output"][0]["content"]}


def test_thinking_older_tool_messages_and_calls_that_never_ran(tmp_path: Path) -> None:
    session = json.loads(DATA.read_text())
    history = session["history"]
    first, second = history[1], history[2]
    # a reasoning model's thinking: no step
    history.insert(1, {"message": {"role": "thinking", "content": "hmm", "signature": "s"}})
    # an older session answers a call with a tool message of its own
    state = first.pop("toolCallStates")[0]
    history.insert(
        3,
        {
            "message": {
                "role": "tool",
                "content": "the file, read",
                "toolCallId": state["toolCallId"],
            }
        },
    )
    # a call waiting for the user's approval has no result
    second["toolCallStates"][0]["status"] = "generated"
    path = tmp_path / "older.json"
    path.write_text(json.dumps(session))
    objective, answer, calls, results = _score(path, tmp_path)
    assert len(calls) == 2 and results == ["the file, read"]
