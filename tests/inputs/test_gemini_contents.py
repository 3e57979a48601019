"""A conversation in the Gemini API's shape (tests/data/SOURCES.md: recorded from a live call
by pydantic-ai's tests), scored with `tracegrade score FILE --db DB` and no other flag; and
the same as the Python SDK's `model_dump()` writes it (snake_case, no ids). Before 2026-12-07
both were one `unrecognised_file` line. The expectations are read from the file here with
`json`, not with the code under test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "gemini-contents" / "retry.json"

_TRACE = (
    "SELECT objective, result_summary, "
    "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
    "  s -> [s.tool_name, s.input]), "
    "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content) "
    "FROM traces"
)


def _score(path: Path, tmp_path: Path) -> tuple[Any, ...]:
    db = tmp_path / f"{path.stem}.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    (row,) = query_rows(db, _TRACE)
    return tuple(row)


def _expected(contents: list[dict[str, Any]]) -> tuple[Any, ...]:
    parts = [p for c in contents for p in c["parts"]]
    calls = [p["functionCall"] for p in parts if "functionCall" in p]
    responses = [p["functionResponse"]["response"] for p in parts if "functionResponse" in p]
    return (
        contents[0]["parts"][0]["text"],
        contents[-1]["parts"][0]["text"],
        [[c["name"], json.dumps(c["args"])] for c in calls],
        [json.dumps({"error": r["error"]}) if "error" in r else json.dumps(r) for r in responses],
    )


def test_contents_are_calls_and_their_responses(tmp_path: Path) -> None:
    contents = json.loads(DATA.read_text())
    shutil.copy(DATA, tmp_path / DATA.name)
    expected = _expected(contents)
    assert _score(tmp_path / DATA.name, tmp_path) == expected and len(expected[2]) == 2


def test_the_sdk_s_dump_without_ids_pairs_responses_by_name(tmp_path: Path) -> None:
    contents = json.loads(DATA.read_text())
    dumped = []
    for content in contents:
        parts = []
        for part in content["parts"]:
            if "functionCall" in part:
                call = {k: v for k, v in part["functionCall"].items() if k != "id"}
                parts.append({"function_call": call})
            elif "functionResponse" in part:
                response = {k: v for k, v in part["functionResponse"].items() if k != "id"}
                parts.append({"function_response": response})
            else:
                parts.append(part)
        dumped.append({"parts": parts, "role": content["role"]})
    path = tmp_path / "history.json"
    path.write_text(json.dumps(dumped))
    assert _score(path, tmp_path) == _expected(contents)
