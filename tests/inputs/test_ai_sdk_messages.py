"""Chats as the Vercel AI SDK's UI keeps them (tests/data/SOURCES.md: a real LangGraph agent
run that vercel/ai recorded, as AI SDK 7 and AI SDK 4 write it), scored with `tracegrade
score FILE --db DB` and no other flag. Before 2026-12-07 an AI SDK 4 chat was read as one
thought (its tool calls in `toolInvocations` and `tool-invocation` parts ignored) and an AI
SDK 5+ chat was one `unrecognised_file` line. The expectations are read from the files here
with `json`, not with the code under test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "ai-sdk"

_TRACE = (
    "SELECT objective, result_summary, "
    "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
    "  s -> [s.tool_name, s.input]), "
    "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content) "
    "FROM traces"
)


def _tool(part: dict[str, Any]) -> dict[str, Any] | None:
    """A part's call as AI SDK 5 names its fields (AI SDK 4's `toolInvocation` renamed)."""
    if part["type"] == "tool-invocation":
        call = part["toolInvocation"]
        return {"name": call["toolName"], "input": call["args"], "output": call["result"]}
    if part["type"] == "dynamic-tool":
        return {"name": part["toolName"], "input": part["input"], "output": part["output"]}
    return None


def _expected(messages: list[dict[str, Any]]) -> tuple[Any, ...]:
    parts = [part for message in messages for part in message["parts"]]
    calls = [c for c in map(_tool, parts) if c is not None]
    texts = [p["text"] for p in parts if p["type"] == "text"]
    return (
        texts[0],
        texts[-1],
        [[c["name"], json.dumps(c["input"], sort_keys=True, separators=(",", ":"))] for c in calls],
        [c["output"] for c in calls],
    )


def _score(messages: Any, tmp_path: Path, name: str) -> tuple[Any, ...]:
    path = tmp_path / name
    path.write_text(json.dumps(messages))
    db = tmp_path / f"{name}.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    (row,) = query_rows(db, _TRACE)
    return tuple(row)


@pytest.mark.parametrize("name", ["ui-messages.json", "ui-messages-ai-sdk-4.json"])
def test_a_saved_chat_is_its_calls_and_results(tmp_path: Path, name: str) -> None:
    messages = json.loads((DATA / name).read_text())
    shutil.copy(DATA / name, tmp_path / name)
    db = tmp_path / "s.duckdb"
    assert main(["score", str(tmp_path / name), "--db", str(db), "--no-embedder"]) == 0
    (row,) = query_rows(db, _TRACE)
    expected = _expected(messages)
    assert tuple(row) == expected and len(expected[2]) == 2


def test_a_failed_call_and_an_ai_sdk_4_message_without_parts(tmp_path: Path) -> None:
    messages = json.loads((DATA / "ui-messages.json").read_text())
    tool = next(p for p in messages[1]["parts"] if p["type"] == "dynamic-tool")
    tool.update(state="output-error", errorText="weather service unavailable")
    del tool["output"]
    *_, observations = _score(messages, tmp_path, "failed.json")
    assert json.loads(observations[0]) == {"error": "weather service unavailable"}
    # AI SDK 4 kept a message's text in `content` and its calls in `toolInvocations`
    old = json.loads((DATA / "ui-messages-ai-sdk-4.json").read_text())
    for message in old:
        del message["parts"]
    got = _score(old, tmp_path, "v4.json")
    expected = _expected(json.loads((DATA / "ui-messages-ai-sdk-4.json").read_text()))
    assert got == expected


def test_parts_that_are_not_the_ai_sdk_s_are_not_taken_for_ui_messages(tmp_path: Path) -> None:
    # OpenTelemetry GenAI messages have typed parts too (`text` with `content`, `tool_call`);
    # a text part without its text is no UI message either: each file one refusal, no crash
    genai = [
        {"role": "user", "parts": [{"type": "text", "content": "weather?"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "f"}]},
    ]
    bare = [{"role": "user", "parts": [{"type": "text"}]}]
    for name, document in (("genai.json", genai), ("bare.json", bare)):
        path = tmp_path / name
        path.write_text(json.dumps(document))
        db = tmp_path / f"{name}.duckdb"
        assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 1
        assert query_rows(db, "SELECT rule FROM files") == [("unrecognised_file",)]
