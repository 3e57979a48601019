"""Amp threads as Amp saves them (tests/data/SOURCES.md: two real threads), scored with
`tracegrade score FILE --db DB` and no other flag. Their tool results name the call in
`toolUseID` and hold the result in a `run`; before 2026-12-07 every thread was quarantined
`unmatched_tool_message` ("tool_call_id None"). The expectations are read from the files here
with `json`, not with the code under test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "amp"
THREADS = sorted(DATA.glob("T-*.json"))


def _blocks(thread: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [b for m in thread["messages"] for b in m["content"] if b["type"] == kind]


def _score(path: Path, tmp_path: Path) -> tuple[Any, ...]:
    db = tmp_path / f"{path.stem}.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    (row,) = query_rows(
        db,
        "SELECT objective, result_summary, "
        "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
        "  s -> [s.tool_name, s.input]), "
        "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content) "
        "FROM traces",
    )
    return tuple(row)


@pytest.mark.parametrize("path", THREADS, ids=[p.stem for p in THREADS])
def test_a_thread_is_its_calls_and_their_results(tmp_path: Path, path: Path) -> None:
    thread = json.loads(path.read_text())
    shutil.copy(path, tmp_path / path.name)
    objective, answer, calls, results = _score(tmp_path / path.name, tmp_path)
    uses, done = _blocks(thread, "tool_use"), _blocks(thread, "tool_result")
    assert objective == thread["messages"][0]["content"][0]["text"]
    assert answer == _blocks(thread, "text")[-1]["text"]
    assert calls == [
        [u["name"], json.dumps(u["input"], sort_keys=True, separators=(",", ":"))] for u in uses
    ]
    assert [json.loads(r) for r in results] == [d["run"]["result"] for d in done]


def test_a_run_that_did_not_finish_is_a_failed_call(tmp_path: Path) -> None:
    thread = json.loads(THREADS[0].read_text())
    first = _blocks(thread, "tool_result")[0]
    first["run"] = {"status": "error", "error": {"message": "file not found"}}
    path = tmp_path / "failed.json"
    path.write_text(json.dumps(thread))
    *_, results = _score(path, tmp_path)
    assert json.loads(results[0]) == {"error": json.dumps({"message": "file not found"})}
