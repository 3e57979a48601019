"""A Cline SDK session as the SDK saves it (tests/data/SOURCES.md), scored with `tracegrade
score FILE --db DB` and no other flag. Its tool results come back as JSON text or as a list
of `{query, result}` objects (one per file read or command run), which are no content parts:
before 2026-12-07 such a list was read as an empty result. The expectations are read from the
file here with `json`, not with the code under test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "cline-sdk" / "session.messages.json"


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(json.dumps(part, ensure_ascii=False) for part in content)


def test_each_tool_result_is_its_observation_whatever_its_shape(tmp_path: Path) -> None:
    session = json.loads(DATA.read_text())
    blocks = [b for m in session["messages"] for b in m["content"]]
    uses = [b for b in blocks if b["type"] == "tool_use"]
    results = [b for b in blocks if b["type"] == "tool_result"]
    assert any(isinstance(r["content"], list) for r in results)
    assert [r["tool_use_id"] for r in results] == [u["id"] for u in uses]
    first = session["messages"][0]["content"]
    shutil.copy(DATA, tmp_path / DATA.name)
    db = tmp_path / "s.duckdb"
    assert main(["score", str(tmp_path / DATA.name), "--db", str(db), "--no-embedder"]) == 0
    ((objective, tools, observations),) = query_rows(
        db,
        "SELECT objective, "
        "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
        "s -> s.tool_name), "
        "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content) "
        "FROM traces",
    )
    assert objective == next(b["text"] for b in first if b["type"] == "text")
    assert tools == [u["name"] for u in uses]
    assert observations == [_result_text(r["content"]) for r in results]
    assert all(observations)
