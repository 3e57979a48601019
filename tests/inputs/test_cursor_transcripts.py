"""A Cursor agent transcript as Cursor writes it (tests/data/SOURCES.md: a real one), scored
with `tracegrade score FILE --db DB` and no other flag. Before 2026-12-07 it was one
`unrecognised_file` line. The expectations are read from the file here with `json`, not with
the code under test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "cursor" / "cursor-session-simple.jsonl"


def test_a_transcript_is_its_calls_without_results(tmp_path: Path) -> None:
    lines = [json.loads(line) for line in DATA.read_text().splitlines()]
    shutil.copy(DATA, tmp_path / DATA.name)
    db = tmp_path / "c.duckdb"
    assert main(["score", str(tmp_path / DATA.name), "--db", str(db), "--no-embedder"]) == 0
    ((objective, answer, calls, kinds, thoughts),) = query_rows(
        db,
        "SELECT objective, result_summary, "
        "list_transform(list_filter(steps, s -> s.tool_name IS NOT NULL), "
        "  s -> [s.tool_name, s.input]), "
        "list_transform(steps, s -> s.type), "
        "list_transform(list_filter(steps, s -> s.type = 'thought'), s -> s.content) FROM traces",
    )
    blocks = [b for line in lines for b in line["message"]["content"]]
    query = lines[0]["message"]["content"][0]["text"]
    assert objective == query.split("<user_query>")[1].split("</user_query>")[0].strip()
    assert calls == [
        [
            b["name"],
            json.dumps(b["input"], sort_keys=True, separators=(",", ":"), ensure_ascii=False),
        ]
        for b in blocks
        if b["type"] == "tool_use"
    ]
    assert "observation" not in kinds  # Cursor keeps no result
    last = lines[-1]["message"]["content"][0]["text"]
    assert answer == last.replace("[REDACTED]", "").strip() and answer
    assert not any("[REDACTED]" in thought for thought in thoughts)


def test_a_query_after_other_tags_and_a_reply_written_as_text(tmp_path: Path) -> None:
    lines = [json.loads(line) for line in DATA.read_text().splitlines()]
    first = lines[0]["message"]["content"][0]
    first["text"] = "<user_info>macOS</user_info>\n" + first["text"]
    lines.append({"role": "assistant", "message": {"content": "Anything else?"}})
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    db = tmp_path / "t.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    ((objective, answer),) = query_rows(db, "SELECT objective, result_summary FROM traces")
    assert objective == first["text"].split("<user_query>")[1].split("</user_query>")[0].strip()
    assert answer == "Anything else?"
