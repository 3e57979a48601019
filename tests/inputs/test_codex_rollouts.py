"""Codex session rollouts as Codex writes them (tests/data/SOURCES.md: a Codex CLI 0.125 session
from a public repository) score with no format flag: the session is one trace, the first
message the user typed its objective, the last assistant message its answer, every function
and custom tool call in order, the commands that ended with a nonzero exit (as Codex's own
`exec_command_end` events report them) failed calls that the levels count, the turn's model
the agent, the outcome unknown. Expectations are read from the raw events here, not with the
code under test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "codex"
ROLLOUT = DATA / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"


def _payloads(path: Path, kind: str) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [e["payload"] | {"_type": e["type"]} for e in events if e["type"] == kind]


def test_a_rollout_is_one_trace_as_written(tmp_path: Path) -> None:
    db = tmp_path / "x.duckdb"
    assert main(["score", str(ROLLOUT), "--db", str(db), "--no-embedder"]) == 0
    ((objective, answer, agent, success, calls, errors, trace_id),) = query_rows(
        db,
        "SELECT objective, result_summary, agent_id, success, "
        "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
        "  s -> s.tool_name), "
        "len(list_filter(steps, s -> s.type = 'observation' AND s.content LIKE '{\"error\":%')), "
        "trace_id FROM traces",
    )
    items = _payloads(ROLLOUT, "response_item")
    shown = _payloads(ROLLOUT, "event_msg")
    typed = [p["message"] for p in shown if p["type"] == "user_message"]
    said = [
        "\n".join(part["text"] for part in p["content"])
        for p in items
        if p["type"] == "message" and p["role"] == "assistant"
    ]
    called = [
        "web_search" if p["type"] == "web_search_call" else p["name"]
        for p in items
        if p["type"] in ("function_call", "custom_tool_call", "web_search_call")
    ]
    ended = [p for p in shown if p["type"] == "exec_command_end" and p["exit_code"] != 0]
    (model,) = {p["model"] for p in _payloads(ROLLOUT, "turn_context")}
    assert objective == typed[0] and answer == said[-1]
    assert (agent, success, calls) == (model, None, called)
    assert errors == len(ended) == 4
    ((counted, level),) = query_rows(
        db,
        "SELECT (SELECT count(*) FROM confidence_steps WHERE step_kind = 'tool_call' "
        f"AND tool_success_rate = 0), level FROM confidence_traces WHERE trace_id = '{trace_id}'",
    )
    assert counted == 4 and level in ("CONFIRM", "ESCALATE")


def test_a_rollout_without_command_ends_reads_the_exit_in_the_output(tmp_path: Path) -> None:
    """Older rollouts report a command's exit only in its output: the nonzero ones there are
    the failed calls (a poll of a command left running included, which ends there)."""
    lines = [
        line
        for line in ROLLOUT.read_text().splitlines()
        if json.loads(line)["payload"].get("type") != "exec_command_end"
    ]
    path = tmp_path / "older.jsonl"
    path.write_text("\n".join(lines) + "\n")
    db = tmp_path / "o.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    ((errors,),) = query_rows(
        db,
        "SELECT len(list_filter(steps, s -> s.type = 'observation' "
        "AND s.content LIKE '{\"error\":%')) FROM traces",
    )
    outputs = [
        p for p in _payloads(ROLLOUT, "response_item") if p["type"] == "function_call_output"
    ]
    exited = [
        p
        for p in outputs
        if "Process exited with code" in p["output"]
        and "Process exited with code 0" not in p["output"]
    ]
    assert errors == len(exited) and errors > 0


def test_a_fork_is_one_session_and_codexs_own_user_messages_are_not_prompts() -> None:
    """A forked session's file starts with its own `session_meta`, then its parent's items,
    the parent's `session_meta` among them: one session, the fork's. What Codex writes as
    the user's (an environment context, AGENTS.md, a message with no text) is no prompt."""
    from transforms.codex import codex_records

    def event(line_type: str, **payload: object) -> dict[str, object]:
        return {"timestamp": "2026-05-11T08:27:17.490Z", "type": line_type, "payload": payload}

    events = [
        event("session_meta", id="fork", forked_from_id="parent", timestamp="2026-05-12T00:00:00Z"),
        event("session_meta", id="parent", timestamp="2026-05-11T00:00:00Z"),
        event(
            "event_msg",
            type="user_message",
            kind="user_instructions",
            message="<user_instructions>be terse",
        ),
        event(
            "event_msg",
            type="user_message",
            message="<environment_context>cwd</environment_context>",
        ),
        event("event_msg", type="user_message", message="", images=["data:image/png;base64,AA=="]),
        event("event_msg", type="user_message", kind="plain", message="fix the bug"),
        event(
            "response_item",
            type="message",
            role="assistant",
            content=[{"type": "output_text", "text": "done"}],
        ),
        event("event_msg", type="user_message", message="now add a test"),
    ]
    ((first, record),) = codex_records(events)
    assert first is events[0] and record["session"] == "fork"
    assert record["started"] == "2026-05-12T00:00:00Z"
    users = [m["content"] for m in record["messages"] if m["role"] == "user"]
    assert users == ["fix the bug", "now add a test"]
