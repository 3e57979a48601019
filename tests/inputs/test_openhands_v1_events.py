"""OpenHands V1's evaluation output as its benchmarks harness writes it (tests/data/SOURCES.md:
two OpenAgentSafety instances, the software-agent-sdk's typed events) scores with no flag: each
line one trace, the instruction its objective, the `FinishAction`'s message its answer, every
tool call in order, a command that exited other than 0 a failed call, the model its metadata
names the agent, the outcome unknown (the safety score is no success label). Before, the file
stopped the run with a traceback (an action object where the reader took a name).
Expectations are read from the raw lines here, not with the code under test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "openhands-v1-eval"
TRACE_SQL = (
    "SELECT row_number, objective, result_summary, agent_id, success, "
    "list_transform(list_filter(steps, s -> s.tool_present), s -> s.tool_name), "
    "list_transform(list_filter(steps, s -> s.type = 'observation'), "
    "  s -> starts_with(s.content, '{\"error\"')) FROM traces ORDER BY 1"
)


def _lines() -> list[dict[str, Any]]:
    return [json.loads(text) for text in (DATA / "output.jsonl").read_text().splitlines()]


def _exit_code(observation: dict[str, Any]) -> int:
    return observation.get("exit_code") or observation["metadata"]["exit_code"]


def _expected(line: dict[str, Any]) -> tuple[Any, ...]:
    events = line["history"]
    actions = [e for e in events if e["kind"] == "ActionEvent"]
    finish = [e["action"]["message"] for e in actions if e["action"]["kind"] == "FinishAction"]
    calls = [e["tool_name"] for e in actions if e["action"]["kind"] != "FinishAction"]
    results = [
        e["observation"]
        for e in events
        if e["kind"] == "ObservationEvent" and e["observation"]["kind"] != "FinishObservation"
    ]
    failed = [_exit_code(result) not in (0, -1) for result in results]
    answer = finish[-1] if finish else ""
    return line["instruction"], answer, line["metadata"]["llm"]["model"], None, calls, failed


def test_each_v1_instance_is_one_trace_as_the_harness_wrote_it(tmp_path: Path) -> None:
    db = tmp_path / "v1.duckdb"
    assert main(["score", str(DATA), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT count(*) FROM quarantine") == [(0,)]
    lines = _lines()
    rows = query_rows(db, TRACE_SQL)
    assert [row[0] for row in rows] == list(range(1, len(lines) + 1))
    for number, *found in rows:
        assert tuple(found) == _expected(lines[int(number) - 1]), number  # type: ignore[call-overload]
    # the first instance recovers from its failed `mail`; the second fails eight times over
    assert [sum(row[6]) for row in rows] == [1, 8]


def test_newer_v1_results_a_scaffold_error_and_a_user_message_read_as_written(
    tmp_path: Path,
) -> None:
    """The SDK's later shapes: a user `MessageEvent` (the objective where it says one), a
    result given as `content` parts with `is_error`, and an `AgentErrorEvent` answering a call
    the scaffold refused (both failed calls)."""
    line = _lines()[0]
    calls_written = _expected(line)[4]
    events = line["history"]
    results = [i for i, e in enumerate(events) if e["kind"] == "ObservationEvent"]
    first, second = results[0], results[1]
    events[first] = {
        **events[first],
        "observation": {
            "kind": "TerminalObservation",
            "content": [{"type": "text", "text": "chat_npc: not found"}],
            "is_error": True,
        },
    }
    events[second] = {
        "kind": "AgentErrorEvent",
        "id": events[second]["id"],
        "timestamp": events[second]["timestamp"],
        "source": "agent",
        "tool_name": events[second]["tool_name"],
        "tool_call_id": events[second]["tool_call_id"],
        "error": "Error validating args for tool 'execute_bash'",
    }
    asked = {
        "kind": "MessageEvent",
        "id": "m0",
        "timestamp": events[0]["timestamp"],
        "source": "user",
        "llm_message": {"role": "user", "content": [{"type": "text", "text": "Help David."}]},
    }
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps({**line, "history": [asked, *events]}) + "\n")
    db = tmp_path / "newer.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    ((_, objective, _, _, _, calls, failed),) = query_rows(db, TRACE_SQL)
    assert objective == "Help David."
    assert calls == calls_written
    assert failed[0] and sum(failed) == 2  # the scaffold's error reads as one as it is
    ((types, refused),) = query_rows(
        db, "SELECT list_transform(steps, s -> s.type), steps[4].content FROM traces"
    )
    assert refused == events[second]["error"]
    # each call after a failed one recovers: the second and the third
    assert types[:6] == ["tool_call", "observation", *["error_recovery", "observation"] * 2]
