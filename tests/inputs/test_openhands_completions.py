"""OpenHands completion logs as the V1 SDK wrote them (tests/data/SOURCES.md: calls of its
hello-world example, one run with native function calling, one with it mocked), scored with
`tracegrade score FILE --db DB` and no other flag. Before 2026-12-07 they were read as plain
chat: the last reply dropped, no agent, the time 1970, and where function calling was mocked
the objective was OpenHands' in-context example and every tool call was lost in text. The
expectations are read from the files here with `json`, not with the code under test."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "openhands-completions"
NATIVE = sorted((DATA / "llm-logs").glob("*.json"))
MOCKED = DATA / "nonfncall-llm-logs" / "litellm_proxy__deepseek__deepseek-chat-1757015076.651.json"

_TRACE = (
    "SELECT objective, result_summary, agent_id, created_at, "
    "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
    "  s -> [s.tool_name, s.input]), "
    "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content) "
    "FROM traces"
)


def _expected(log: dict[str, Any], messages: list[dict[str, Any]]) -> tuple[Any, ...]:
    reply = log["response"]["choices"][0]["message"]
    said = [*messages, reply]
    calls = [
        [call["function"]["name"], call["function"]["arguments"]]
        for message in said
        for call in message.get("tool_calls") or []
    ]
    results = [
        "\n".join(p["text"] for p in m["content"])
        if isinstance(m["content"], list)
        else m["content"]
        for m in said
        if m["role"] == "tool"
    ]
    task = next(m for m in messages if m["role"] == "user")["content"]
    task = task if isinstance(task, str) else task[0]["text"]
    finish = json.loads(calls[-1][1])["message"]
    when = datetime.fromtimestamp(log["timestamp"], UTC)
    return task, finish, log["response"]["model"], when, calls, results


@pytest.mark.parametrize(
    ("path", "sent"), [(NATIVE[-1], "messages"), (MOCKED, "raw_messages")], ids=["native", "mocked"]
)
def test_a_log_is_the_conversation_with_its_calls_and_the_last_reply(
    tmp_path: Path, path: Path, sent: str
) -> None:
    log = json.loads(path.read_text())
    shutil.copy(path, tmp_path / path.name)
    db = tmp_path / "s.duckdb"
    assert main(["score", str(tmp_path / path.name), "--db", str(db), "--no-embedder"]) == 0
    (row,) = query_rows(db, _TRACE)
    expected = _expected(log, log[sent])
    assert tuple(row) == expected
    assert not row[0].startswith("Here's a running example")
    assert row[4][-1][0] == "finish"


def test_the_logs_of_one_run_are_one_trace_the_last_call_s(tmp_path: Path) -> None:
    folder = tmp_path / "llm_completions" / "instance-1"
    folder.mkdir(parents=True)
    for path in NATIVE:  # the first call of the run and its last
        shutil.copy(path, folder / path.name)
    db = tmp_path / "f.duckdb"
    assert main(["score", str(tmp_path / "llm_completions"), "--db", str(db), "--no-embedder"]) == 0
    ((source, steps),) = query_rows(db, "SELECT source_file, len(steps) FROM traces")
    assert source.endswith(NATIVE[-1].name) and steps > 10
    assert query_rows(db, "SELECT rule FROM quarantine") == [("duplicate_id",)]


def test_a_command_that_exited_non_zero_is_a_failed_call(tmp_path: Path) -> None:
    log = json.loads(NATIVE[-1].read_text())
    ran = next(
        m
        for m in log["messages"]
        if m["role"] == "tool" and "exit code 0.]" in json.dumps(m["content"])
    )
    for part in ran["content"]:
        # the tool's own line and the runtime's after it
        text = part["text"].replace("exit code 0.]", "exit code 1.]")
        part["text"] = text.replace("exit code 0]", "exit code 1]")
    path = tmp_path / "failed.json"
    path.write_text(json.dumps(log))
    db = tmp_path / "x.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    (row,) = query_rows(db, _TRACE)
    failed = [o for o in row[5] if o.startswith('{"error"')]
    assert [json.loads(o)["error"] for o in failed] == [ran["content"][0]["text"]]


def test_a_caching_mark_on_the_task_does_not_split_a_conversation(tmp_path: Path) -> None:
    # OpenHands 0.x marks the last messages it sends for prompt caching, so the first log's
    # task carries `cache_control` and later logs' do not
    first, last = (json.loads(path.read_text()) for path in NATIVE)
    task = next(m for m in first["messages"] if m["role"] == "user")
    for part in task["content"]:
        part["cache_control"] = {"type": "ephemeral"}
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / NATIVE[0].name).write_text(json.dumps(first))
    (folder / NATIVE[1].name).write_text(json.dumps(last))
    db = tmp_path / "c.duckdb"
    assert main(["score", str(folder), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT count(*) FROM traces") == [(1,)]
