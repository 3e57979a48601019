"""SWE-agent trajectories as SWE-agent wrote them (tests/data/SOURCES.md: two text-action runs
of 0.x, a function-calling replay of 1.x and a 1.x run from its own tests), each scored with
`tracegrade score FILE --db DB` and no other flag. Before, the `.traj` extension was refused;
read as chat, the objective was the in-context demonstration and every observation was
dropped. Now the task is the objective, each turn is a thought, a tool call and its
observation, in order, the submission is the answer, and the outcome is unknown (SWE-agent
records none, SPEC 1). A turn's tool is the function the model called where the run used
function calling (before 2026-12-07 the action's first word: `bash` running `python3 x.py`
was stored as `python3`), and the model of a 1.x run is the agent."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "swe-agent"
RUNS = sorted(path.name for path in DATA.glob("*.traj"))


def _expected(run: dict[str, Any]) -> tuple[str, list[str], list[str], str, Any]:
    """The task (the first user message that is not a demonstration), the tools and the
    observations of the turns, the submission and the model, read from the file itself: a
    turn's tool is the function the model called (1.x: the history's tool calls, in order),
    else its action's first word (0.x text actions; the last turn of a run the history ends
    before)."""
    task = next(
        message["content"]
        for message in run["history"]
        if message["role"] == "user"
        and not message.get("is_demo")
        and message.get("message_type") != "demonstration"
    )
    called = [
        call["function"]["name"]
        for message in run["history"]
        if message["role"] == "assistant" and message.get("message_type") != "demonstration"
        for call in message.get("tool_calls") or []
    ]
    words = [turn["action"].split()[0] for turn in run["trajectory"]]
    tools = called + words[len(called) :]
    observations = [turn["observation"] for turn in run["trajectory"]]
    model = run.get("replay_config", {}).get("agent", {}).get("model", {}).get("name")
    return task, tools, observations, run["info"]["submission"], model


def test_four_real_runs_are_found() -> None:
    assert len(RUNS) == 4


@pytest.mark.parametrize("name", RUNS)
def test_each_trajectory_is_one_trace_as_written(tmp_path: Path, name: str) -> None:
    shutil.copy(DATA / name, tmp_path / name)
    db = tmp_path / "s.duckdb"
    assert main(["score", str(tmp_path / name), "--db", str(db), "--no-embedder"]) == 0
    run = json.loads((DATA / name).read_text())
    task, tools, observations, submission, model = _expected(run)
    ((objective, answer, success, agent, calls, seen, thoughts),) = query_rows(
        db,
        "SELECT objective, result_summary, success, agent_id, "
        "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
        "s -> s.tool_name), "
        "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content), "
        "list_transform(list_filter(steps, s -> s.type = 'thought'), s -> s.content) "
        "FROM traces",
    )
    assert objective == task and not objective.startswith("Here is a demonstration")
    assert answer == submission and answer.lstrip().startswith("diff --git")
    assert calls == tools and calls[-1] == "submit"
    assert seen == observations
    # the thoughts are the turns' own: the submission is the answer, not a thought as well
    assert thoughts == [turn["thought"] for turn in run["trajectory"] if turn["thought"].strip()]
    assert (success, agent) == (None, model)
    assert query_rows(db, "SELECT status, rows_scored FROM files") == [("loaded", 1)]


def test_a_folder_of_traj_files_reads_each_and_format_names_them(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    shutil.copytree(DATA, folder)
    db = tmp_path / "f.duckdb"
    assert main(["score", str(folder), "--db", str(db), "--no-embedder"]) == 0
    assert main(["score", str(folder), "--db", str(db), "--format", "swe-agent", "--force"]) == 0
    ((traces, unknown),) = query_rows(
        db, "SELECT count(*), count(*) FILTER (success IS NULL) FROM traces"
    )
    assert traces == unknown == 4


def test_runs_of_one_task_that_name_no_model_are_told_apart_by_their_content(
    tmp_path: Path,
) -> None:
    # SWE-agent 0.x names no model: two models' runs of one task (as a leaderboard's
    # submissions hold them) had one trace id, and all but the last one read were lost
    run = json.loads((DATA / "swe-agent__test-repo-i1.traj").read_text())
    assert "replay_config" not in run
    other = json.loads(json.dumps(run))
    other["trajectory"][-1]["observation"] += "\n(another model's run)"
    other["info"]["submission"] = run["info"]["submission"].replace("+", "+ ", 1)
    for folder, document in (("gpt4", run), ("claude", other)):
        (tmp_path / "runs" / folder).mkdir(parents=True)
        (tmp_path / "runs" / folder / "task.traj").write_text(json.dumps(document))
    db = tmp_path / "s.duckdb"
    assert main(["score", str(tmp_path / "runs"), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT count(DISTINCT trace_id), count(*) FROM traces") == [(2, 2)]
    answers = query_rows(db, "SELECT result_summary FROM traces ORDER BY result_summary")
    assert sorted(a for (a,) in answers) == sorted(
        [run["info"]["submission"], other["info"]["submission"]]
    )
    assert query_rows(db, "SELECT count(*) FROM quarantine") == [(0,)]
    # the same runs read again are the same traces
    ids = query_rows(db, "SELECT trace_id FROM traces ORDER BY trace_id")
    again = tmp_path / "again.duckdb"
    assert main(["score", str(tmp_path / "runs"), "--db", str(again), "--no-embedder"]) == 0
    assert query_rows(again, "SELECT trace_id FROM traces ORDER BY trace_id") == ids


def test_a_run_cut_off_before_it_submitted_answered_nothing(tmp_path: Path) -> None:
    # a run stopped before its submission (out of budget, killed): its last thought is no
    # answer, so the trace's answer is blank and its level ESCALATE (a run that gave up)
    run = json.loads((DATA / "swe-agent__test-repo-i1.traj").read_text())
    run["info"].pop("submission")
    run["info"].pop("exit_status")
    run["trajectory"] = run["trajectory"][:-1]  # no `submit` turn
    path = tmp_path / "cut.traj"
    path.write_text(json.dumps(run))
    db = tmp_path / "s.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT result_summary FROM traces") == [("",)]
    assert query_rows(db, "SELECT level FROM confidence_traces") == [("ESCALATE",)]


def test_the_turn_the_harness_ends_a_run_with_is_no_step(tmp_path: Path) -> None:
    # SWE-agent 0.x stops a run at its cost limit with a turn of its own: action `exit_cost`,
    # thought "Exit due to cost limit", observation "Exited (autosubmitted)" (as the
    # Multi-SWE-bench runs hold it); before 2026-12-07 a call of a tool `exit_cost`
    run = json.loads((DATA / "swe-agent__test-repo-i1.traj").read_text())
    task, tools, observations, submission, _ = _expected(run)
    run["trajectory"] = run["trajectory"][:-1]  # no `submit`
    run["trajectory"].append(
        {
            "action": "exit_cost",
            "observation": "Exited (autosubmitted)",
            "response": "Exit due to cost limit",
            "thought": "Exit due to cost limit",
            "state": "{}",
        }
    )
    run["info"]["exit_status"] = "submitted (exit_cost)"
    path = tmp_path / "cost.traj"
    path.write_text(json.dumps(run))
    db = tmp_path / "s.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    ((calls, seen, thoughts, answer),) = query_rows(
        db,
        "SELECT list_transform(list_filter(steps, s -> s.tool_name IS NOT NULL), "
        "s -> s.tool_name), "
        "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content), "
        "list_transform(list_filter(steps, s -> s.type = 'thought'), s -> s.content), "
        "result_summary FROM traces",
    )
    assert calls == tools[:-1] and seen == observations[:-1]
    assert "Exit due to cost limit" not in thoughts and answer == submission


def test_the_exit_turn_of_a_1_x_run_is_no_step_either(tmp_path: Path) -> None:
    # SWE-agent 1.x ends a run itself with a turn whose action is empty and whose thought
    # says why (`handle_error_with_autosubmission`): before, a call of a tool `action`
    run = json.loads((DATA / "marshmallow-code__marshmallow-1867.traj").read_text())
    _, tools, observations, _, _ = _expected(run)
    run["trajectory"].append(
        {
            "action": "",
            "observation": "Exited (autosubmitted)",
            "response": "Exit due to cost limit",
            "thought": "Exit due to cost limit",
            "execution_time": 0.0,
            "state": {},
            "query": [],
            "extra_info": {},
        }
    )
    path = tmp_path / "exit.traj"
    path.write_text(json.dumps(run))
    db = tmp_path / "s.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    ((calls, seen),) = query_rows(
        db,
        "SELECT list_transform(list_filter(steps, s -> s.tool_name IS NOT NULL), "
        "s -> s.tool_name), "
        "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content) "
        "FROM traces",
    )
    assert calls == tools and seen == observations
