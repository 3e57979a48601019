"""A VS Code GitHub Copilot Chat session as VS Code stores it (tests/data/SOURCES.md: a real
agent-mode session), scored with `tracegrade score FILE --db DB` and no other flag. Before
2026-12-07 it was one `unrecognised_file` line. The expectations are read from the file here
with `json`, not with the code under test."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "copilot-chat" / "copilot_session_simple.json"

_TRACE = (
    "SELECT objective, result_summary, agent_id, created_at, "
    "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
    "  s -> [s.tool_name, s.input]), "
    "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content) "
    "FROM traces"
)


def _score(session: Any, tmp_path: Path, name: str) -> tuple[Any, ...]:
    path = tmp_path / name
    path.write_text(json.dumps(session))
    db = tmp_path / f"{name}.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    (row,) = query_rows(db, _TRACE)
    return tuple(row)


def test_a_session_is_its_rounds_calls_and_results(tmp_path: Path) -> None:
    session = json.loads(DATA.read_text())
    shutil.copy(DATA, tmp_path / DATA.name)
    db = tmp_path / "s.duckdb"
    assert main(["score", str(tmp_path / DATA.name), "--db", str(db), "--no-embedder"]) == 0
    ((objective, answer, agent, created, calls, results),) = query_rows(db, _TRACE)
    rounds = [r for q in session["requests"] for r in q["result"]["metadata"]["toolCallRounds"]]
    made = [c for r in rounds for c in r["toolCalls"]]
    assert objective == session["requests"][0]["message"]["text"]
    assert answer == rounds[-1]["response"]
    assert (agent, created) == (
        session["requests"][-1]["modelId"],
        datetime.fromtimestamp(session["creationDate"] / 1000, UTC),
    )
    assert calls == [[c["name"], c["arguments"]] for c in made] and len(calls) == 2
    # each result's text, from VS Code's tree of prompt nodes
    assert results[0].startswith("The following files were successfully edited:")
    assert results[1].startswith("1 match") and "Bonjour" in results[1]


def test_an_export_without_the_model_s_rounds_keeps_what_the_view_showed(
    tmp_path: Path,
) -> None:
    session = json.loads(DATA.read_text())
    for request in session["requests"]:
        request["result"].pop("metadata")
    objective, answer, _, _, calls, results = _score(session, tmp_path, "export.json")
    shown = [p for q in session["requests"] for p in q["response"]]
    tools = [p["toolId"] for p in shown if p.get("kind") == "toolInvocationSerialized"]
    last = session["requests"][-1]["response"]
    text_after = [
        p["value"]
        for p in last[
            last.index(next(p for p in last if p.get("kind") == "toolInvocationSerialized")) + 1 :
        ]
        if p.get("kind") is None and isinstance(p.get("value"), str)
    ]
    assert [name for name, _ in calls] == tools and results == []
    assert answer == "".join(text_after)


def test_odd_calls_are_no_crash(tmp_path: Path) -> None:
    session = json.loads(DATA.read_text())
    session["requests"][2]["result"]["metadata"]["toolCallRounds"][0]["toolCalls"] = 5
    _, _, _, _, calls, _ = _score(session, tmp_path, "odd.json")
    assert [name for name, _ in calls] == ["replace_string_in_file"]
    # a call whose id is no text: that session is rejected with its reason, not a crash
    rounds = session["requests"][1]["result"]["metadata"]["toolCallRounds"]
    rounds[0]["toolCalls"][0]["id"] = ["not", "text"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(session))
    db = tmp_path / "bad.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 1
    ((rule, reason),) = query_rows(db, "SELECT rule, reason FROM quarantine")
    assert rule == "malformed_record" and "id is" in reason
