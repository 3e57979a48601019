"""ATIF trajectories (tests/data/harbor: a Harbor trial of the OpenClaw agent on a PinchBench
task as the trial folder holds it, its results written as steps of their own, and Harbor's own
golden trajectory of terminus-2, its results in the calling step) score with no format flag:
each file one trace, the first user message the objective, each tool call a call answered by
its result, a command that exited non-zero a failed call, the last agent message the answer,
the model the agent; in a trial, the verifier's reward the outcome. Before, the `steps` key
made the file read as tracegrade's own traces: `missing_id`. Expectations are read from the
raw files here."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "harbor"
TRIAL = DATA / "task-gh-issue-triage__sx8jKBo"
GOLDEN = DATA / "golden" / "hello-world-invalid-json.trajectory.json"

_TRACE = (
    "SELECT objective, result_summary, agent_id, success, created_at, "
    "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
    "  s -> s.tool_name), "
    "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content) "
    "FROM traces"
)


def _score(path: Path, tmp_path: Path) -> tuple[Any, ...]:
    db = tmp_path / "a.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT count(*) FROM quarantine") == [(0,)]
    (row,) = query_rows(db, _TRACE)
    return row


def _said(steps: list[dict[str, Any]], source: str) -> list[str]:
    return [step["message"] for step in steps if step["source"] == source and step["message"]]


def test_a_harbor_trial_is_one_trace_with_its_reward(tmp_path: Path) -> None:
    trajectory = json.loads((TRIAL / "agent" / "trajectory.json").read_text())
    reward = json.loads((TRIAL / "result.json").read_text())["verifier_result"]["rewards"]
    steps = trajectory["steps"]
    calls = [call["function_name"] for step in steps for call in step.get("tool_calls", [])]
    answered = [step for step in steps if step.get("extra", {}).get("tool_call_id")]

    def result(step: dict[str, Any]) -> str:
        content = step["observation"]["results"][0]["content"]
        code = step["extra"].get("exec_exit_code")
        return json.dumps({"error": content}) if code not in (0, None) else content

    got = _score(TRIAL, tmp_path)

    objective, answer, agent, success, started, tools, observations = got
    assert objective == _said(steps, "user")[0]
    assert answer == _said(steps, "agent")[-1]
    assert agent == trajectory["agent"]["model_name"]
    assert success is (reward["reward"] == 1) and reward["reward"] < 1
    assert started == datetime.fromisoformat(steps[0]["timestamp"]).astimezone(UTC)
    assert tools == calls and len(calls) == len(answered)  # every call answered
    # each call's result once (the step holding it repeats it as its message), in order;
    # the commands that exited non-zero (gh not found, not logged in) failed
    assert observations == [result(step) for step in answered]
    assert sum(o.startswith('{"error"') for o in observations) == 4


def test_a_trial_folder_reads_its_trajectory_and_not_its_other_files(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"

    assert main(["score", str(DATA), "--db", str(db), "--no-embedder"]) == 0

    # result.json and verifier/reward.json are read through the trajectory, not on their own;
    # a multi-step trial's step trajectories are not read beside the trial's, which holds them
    files = query_rows(db, "SELECT regexp_extract(path, '[^/]+/[^/]+/[^/]+$'), status FROM files")
    assert sorted(files) == [
        ("harbor/golden/hello-world-invalid-json.trajectory.json", "loaded"),
        ("t3-data-pipeline-report__25HCHpE/agent/trajectory.json", "loaded"),
        ("task-gh-issue-triage__sx8jKBo/agent/trajectory.json", "loaded"),
    ]


def test_a_multi_step_trial_is_its_own_trajectory_once(tmp_path: Path) -> None:
    trial = DATA / "t3-data-pipeline-report__25HCHpE"
    whole = json.loads((trial / "agent" / "trajectory.json").read_text())
    step = json.loads((trial / "steps" / "run" / "agent" / "trajectory.json").read_text())
    # the trial's trajectory holds the step's again, under a session id of its own
    assert whole["session_id"] != step["session_id"]
    assert [s.get("message") for s in whole["steps"]][:3] == [
        s.get("message") for s in step["steps"]
    ][:3]
    reward = json.loads((trial / "result.json").read_text())["verifier_result"]["rewards"]

    objective, answer, agent, success, *_ = _score(trial, tmp_path)

    assert (objective, answer) == (
        _said(whole["steps"], "user")[0],
        _said(whole["steps"], "agent")[-1],
    )
    assert success is (reward["reward"] == 1) is False


def test_harbors_own_trajectory_answers_each_call_in_its_step(tmp_path: Path) -> None:
    trajectory = json.loads(GOLDEN.read_text())
    steps = trajectory["steps"]
    with_calls = [step for step in steps if step.get("tool_calls")]
    results = [r["content"] for step in with_calls for r in step["observation"]["results"]]

    objective, answer, agent, success, started, tools, observations = _score(GOLDEN, tmp_path)

    assert objective == _said(steps, "user")[0]
    assert answer == _said(steps, "agent")[-1]
    assert agent == trajectory["agent"]["model_name"]
    assert (success, started) == (None, datetime(1970, 1, 1, tzinfo=UTC))  # no trial, no times
    assert tools == [call["function_name"] for step in with_calls for call in step["tool_calls"]]
    # the harness's feedback on the reply it could not parse answers no call: not read
    assert observations == results
    assert any("observation" in step and not step.get("tool_calls") for step in steps)
