"""Conversations in Amazon Bedrock's Converse API shape (tests/data/SOURCES.md: two recorded
from live calls by pydantic-ai's tests, and a Strands agent's messages), scored with
`tracegrade score FILE --db DB` and no other flag. Before 2026-12-07 their `toolUse` and
`toolResult` blocks (keyed by kind, with no `type`) were dropped: a tool-using run was read
as thoughts alone, its failed call unseen. The expectations are read from the files here with
`json`, not with the code under test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
FILES = [
    DATA / "bedrock-converse" / "retry.json",
    DATA / "bedrock-converse" / "claude-thinking.json",
    DATA / "strands-messages" / "retry_after_refusal.json",
]

_TRACE = (
    "SELECT objective, "
    "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
    "  s -> [s.tool_name, s.input]), "
    "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content) "
    "FROM traces"
)


def _expected(messages: list[dict[str, Any]]) -> tuple[Any, ...]:
    blocks = [block for message in messages for block in message["content"]]
    uses = [b["toolUse"] for b in blocks if "toolUse" in b]
    results = [b["toolResult"] for b in blocks if "toolResult" in b]
    said = ["\n".join(part["text"] for part in result["content"]) for result in results]
    observed = [
        json.dumps({"error": text}) if result.get("status") == "error" else text
        for text, result in zip(said, results, strict=True)
    ]
    calls = [
        [u["name"], json.dumps(u["input"], sort_keys=True, separators=(",", ":"))] for u in uses
    ]
    return messages[0]["content"][0]["text"], calls, observed


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_keyed_tool_blocks_are_calls_and_results(tmp_path: Path, path: Path) -> None:
    document = json.loads(path.read_text())
    messages = document["messages"] if isinstance(document, dict) else document
    shutil.copy(path, tmp_path / path.name)
    db = tmp_path / "s.duckdb"
    assert main(["score", str(tmp_path / path.name), "--db", str(db), "--no-embedder"]) == 0
    (row,) = query_rows(db, _TRACE)
    expected = _expected(messages)
    assert tuple(row) == expected and expected[1]
