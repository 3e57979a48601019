"""tau2-bench results files as tau2-bench saves them (tests/data/SOURCES.md: four trials of one
airline task by grok-3-mini, from a fork of tau2-bench) score with no flag: each simulation is
one trace, its first user message the objective, its last assistant text the answer, the
agent's tool calls in order, a result flagged `error` a failed call, the agent's model the
agent, the domain the task domain, the reward the outcome. The expectations are read from the
file here with `json`, not with the code under test."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import query_rows

from storage.inputs.formats import AutoFormat
from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "tau2" / "airline-relaxed-grok-3-mini.json"


def _arguments(call: dict[str, Any]) -> str:
    return json.dumps(call["arguments"], sort_keys=True, separators=(",", ":"))


def _expected(document: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Per simulation, in the file's order: objective, answer, agent, domain, success, the
    tool calls (name, arguments) and the failed results."""
    agent = document["info"]["agent_info"]["llm"]
    domain = document["info"]["environment_info"]["domain_name"]
    rows = []
    for simulation in document["simulations"]:
        messages = simulation["messages"]
        user = next(m for m in messages if m["role"] == "user")
        said = [m for m in messages if m["role"] == "assistant" and m.get("content")]
        calls = [
            [call["name"], _arguments(call)]
            for m in messages
            if m["role"] == "assistant"
            for call in m.get("tool_calls") or []
        ]
        failed = [m["content"] for m in messages if m["role"] == "tool" and m["error"]]
        success = simulation["reward_info"]["reward"] == 1
        rows.append((user["content"], said[-1]["content"], agent, domain, success, calls, failed))
    return rows


_TRACES = (
    "SELECT objective, result_summary, agent_id, task_domain, success, "
    "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
    "  s -> [s.tool_name, s.input]), "
    "list_transform(list_filter(steps, s -> s.type = 'observation' "
    "  AND s.content LIKE 'Error%'), s -> s.content) "
    "FROM traces ORDER BY row_number"
)


def test_each_simulation_of_a_results_file_is_one_trace(tmp_path: Path) -> None:
    path = tmp_path / DATA.name
    shutil.copy(DATA, path)
    db = tmp_path / "t.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    document = json.loads(DATA.read_text())
    assert query_rows(db, "SELECT status, rows_read FROM files") == [("loaded", 4)]
    expected = _expected(document)
    assert query_rows(db, _TRACES) == expected
    # what the file holds: one failed booking ("Not enough seats"), every trial a failure
    assert sum(len(row[-1]) for row in expected) == 1
    assert {row[4] for row in expected} == {False}
    # the failed call reaches the levels: only its trace is penalised for tool failures
    reasons = query_rows(
        db,
        "SELECT c.reason LIKE '%tool_failures%' FROM confidence_traces c JOIN traces t "
        "USING (trace_id) WHERE c.source = 'derived' ORDER BY t.row_number",
    )
    assert [flag for (flag,) in reasons] == [bool(row[-1]) for row in expected]


def test_the_user_simulators_own_tool_calls_are_not_the_agents(tmp_path: Path) -> None:
    """The telecom domain's user has tools of its own (`requestor` user): such a call and
    its result are the user's side of the conversation; the agent's steps are unchanged."""
    document = json.loads(DATA.read_text())
    document["simulations"] = document["simulations"][:1]
    messages = document["simulations"][0]["messages"]
    at = next(i for i, m in enumerate(messages) if m["role"] == "user") + 1
    user_call = {"id": "u1", "name": "toggle_airplane_mode", "arguments": {}, "requestor": "user"}
    own = [
        {"role": "user", "content": None, "tool_calls": [user_call]},
        {"id": "u1", "role": "tool", "content": "Airplane mode: OFF", "requestor": "user"},
        {"role": "user", "content": "Done.", "tool_calls": [user_call]},
        {"id": "u1", "role": "tool", "content": "Error: busy", "requestor": "user", "error": True},
    ]
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(document))
    messages[at:at] = own
    telecom = tmp_path / "telecom.json"
    telecom.write_text(json.dumps(document))
    steps = []
    for path in (plain, telecom):
        db = tmp_path / f"{path.stem}.duckdb"
        assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
        steps.append(
            query_rows(db, "SELECT list_transform(steps, s -> [s.type, s.tool_name]) FROM traces")
        )
    assert steps[0] == steps[1] and len(steps[0][0][0]) > 4


def test_a_results_file_too_large_to_peek_whole_is_recognised(tmp_path: Path) -> None:
    """tau2-bench's own results files run to tens of MB: past the 8 MiB the registry reads
    of a file, it is known by its `info`, which comes first."""
    document = json.loads(DATA.read_text())
    simulations = []
    for _ in range(28):
        for simulation in document["simulations"]:
            simulations.append({**simulation, "id": str(uuid.UUID(int=len(simulations)))})
    document["simulations"] = simulations
    path = tmp_path / "large.json"
    path.write_text(json.dumps(document, indent=2))
    assert path.stat().st_size > 8 << 20
    assert AutoFormat().chosen(path).name == "tau2"  # type: ignore[union-attr]
    db = tmp_path / "l.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT count(DISTINCT trace_id) FROM traces") == [(112,)]


@pytest.mark.parametrize("layout", ["empty list", "directory"])
def test_a_results_file_without_simulations_is_one_clear_line(tmp_path: Path, layout: str) -> None:
    """A results.json of tau2-bench's directory layout keeps its simulations in files beside
    it (tests/data/tau2-dir: tau2-bench's own, with no `simulations` key; before 2026-12-07 it
    was an unrecognised file): the file says so, and nothing is recorded as loaded."""
    if layout == "directory":
        document = json.loads((DATA.parents[1] / "tau2-dir" / "results.json").read_text())
        assert "simulations" not in document
    else:
        document = {**json.loads(DATA.read_text()), "simulations": []}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(document))
    db = tmp_path / "e.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 1
    ((status, reason),) = query_rows(db, "SELECT status, reason FROM files")
    assert status == "quarantined"
    assert "tau2-bench results file with no simulation" in reason
