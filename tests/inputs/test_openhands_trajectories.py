"""OpenHands trajectories as OpenHands saves them (tests/data/SOURCES.md: four saved
conversations from OpenHands' own repository, Claude 3.5 Sonnet and GPT-4o) score with no
flag: each file is one trace, the user's first message its objective, the finish message its
answer, the tool calls the model made in order, the model the agent, the outcome unknown.
Expectations are read from the raw events here, not with the code under test. A failed
command (an `error` observation) is a failed call, and calling the tool again recovers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "openhands"
TRACE_SQL = (
    "SELECT regexp_extract(source_file, '[^/]+$'), objective, result_summary, agent_id, "
    "success, list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
    "  s -> s.tool_name), list_transform(steps, s -> s.type) FROM traces ORDER BY 1"
)


def _expected(events: list[dict[str, Any]]) -> tuple[Any, ...]:
    said = [
        e for e in events if e.get("source") == "agent" and e.get("action") in ("message", "finish")
    ]
    calls = [
        e["tool_call_metadata"]["function_name"]
        for e in events
        if "action" in e and e.get("tool_call_metadata") and e["action"] != "finish"
    ]
    models = [
        e["tool_call_metadata"]["model_response"]["model"]
        for e in events
        if e.get("tool_call_metadata")
    ]
    user = next(e for e in events if e.get("source") == "user" and e.get("action") == "message")
    return user["args"]["content"], said[-1]["message"], models[0], None, calls


def test_each_saved_conversation_is_one_trace_as_written(tmp_path: Path) -> None:
    folder = tmp_path / "trajs"
    shutil.copytree(DATA, folder)
    db = tmp_path / "o.duckdb"
    assert main(["score", str(folder), "--db", str(db), "--no-embedder"]) == 0
    rows = query_rows(db, TRACE_SQL)
    assert [row[0] for row in rows] == sorted(path.name for path in DATA.iterdir())
    for name, objective, answer, agent, success, calls, _ in rows:
        events = json.loads((DATA / name).read_text())
        assert (objective, answer, agent, success, calls) == _expected(events), name


def test_a_failed_command_is_a_failed_call_and_its_retry_recovers(tmp_path: Path) -> None:
    events = json.loads((DATA / "wrong_initial_state.json").read_text())
    first_result = next(i for i, e in enumerate(events) if e.get("observation") == "read")
    events[first_result] = {
        **events[first_result],
        "observation": "error",
        "content": "no such dir",
    }
    path = tmp_path / "failed.json"
    path.write_text(json.dumps(events))
    db = tmp_path / "f.duckdb"
    assert (
        main(["score", str(path), "--db", str(db), "--no-embedder", "--format", "openhands"]) == 0
    )
    ((_, _, _, _, _, calls, types),) = query_rows(db, TRACE_SQL)
    assert calls == ["str_replace_editor", "execute_bash", "str_replace_editor"]
    assert types.count("error_recovery") == 1  # the second view, after the first failed
