"""A Windsurf Cascade transcript as Windsurf writes it (tests/data/SOURCES.md: a real one),
scored with `tracegrade score FILE --db DB` and no other flag. Before 2026-12-07 it was one
`unrecognised_file` line. The expectations are read from the file here with `json`, not with
the code under test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "windsurf" / "windsurf-session-simple.jsonl"


def test_a_transcript_is_its_actions_as_calls(tmp_path: Path) -> None:
    steps = [json.loads(line) for line in DATA.read_text().splitlines()]
    shutil.copy(DATA, tmp_path / DATA.name)
    db = tmp_path / "w.duckdb"
    assert main(["score", str(tmp_path / DATA.name), "--db", str(db), "--no-embedder"]) == 0
    ((objective, answer, tools, observations, thoughts),) = query_rows(
        db,
        "SELECT objective, result_summary, "
        "list_transform(list_filter(steps, s -> s.tool_name IS NOT NULL), s -> s.tool_name), "
        "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content), "
        "list_transform(list_filter(steps, s -> s.type = 'thought'), s -> s.content) FROM traces",
    )
    said = ("user_input", "planner_response")
    actions = [s for s in steps if s["type"] not in said]
    responses = [
        s["planner_response"]["response"] for s in steps if s["type"] == "planner_response"
    ]
    assert objective == steps[0]["user_input"]["user_response"]
    assert (answer, thoughts) == (responses[-1], responses)
    assert tools == [s["type"] for s in actions]
    # the step whose status is `error` is the one failed call
    failed = [o for o in observations if o.startswith('{"error"')]
    assert len(failed) == 1 == len([s for s in actions if s["status"] == "error"])
    commands = [s["run_command"] for s in actions if s["type"] == "run_command"]
    assert [c["output"] for c in commands if "output" in c] == [
        o for o, s in zip(observations, actions, strict=True) if s["type"] == "run_command" and o
    ]


def test_a_marker_line_and_an_exit_code_written_as_text(tmp_path: Path) -> None:
    steps = [json.loads(line) for line in DATA.read_text().splitlines()]
    steps.insert(3, {"type": "checkpoint", "status": "done"})  # nothing in it: no step
    command = next(s for s in steps if s["type"] == "run_command" and "output" in s["run_command"])
    command["run_command"]["exit_code"] = "1"
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in steps) + "\n")
    db = tmp_path / "t.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    ((observations,),) = query_rows(
        db,
        "SELECT list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content) "
        "FROM traces",
    )
    failed = [json.loads(o)["error"] for o in observations if o.startswith('{"error"')]
    assert command["run_command"]["output"] in failed and len(failed) == 2
