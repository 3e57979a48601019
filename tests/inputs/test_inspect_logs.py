"""Inspect AI eval logs as Inspect writes them (tests/data/SOURCES.md: two `.eval` zips and a
`.json` log from Inspect's own repository) score with no flag: each sample is one trace, its
user message the objective, its last answer the answer, its tool calls in order, its model
the agent, and its first scorer's C/I the outcome (a numeric metric is no label). The
expectations are read from the files here with `zipfile` and `json`, not with the code under
test. A zip that is no eval log, and a `.json` that is none, are refused with their reason."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "inspect-ai"


def _samples(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    if path.suffix == ".eval":
        with zipfile.ZipFile(path) as archive:
            header = json.loads(archive.read("header.json"))
            names = [n for n in archive.namelist() if n.startswith("samples/")]
            return header, [json.loads(archive.read(name)) for name in names]
    log = json.loads(path.read_text())
    return log, log["samples"]


def _expected(path: Path) -> list[tuple[Any, ...]]:
    """(objective, answer, agent, success, tool calls) of each sample, from the raw file."""
    header, samples = _samples(path)
    rows = []
    for sample in samples:
        messages = sample["messages"]
        user = next(m for m in messages if m["role"] == "user")
        said = [m for m in messages if m["role"] == "assistant" and m.get("content")]
        value = next(iter(sample["scores"].values()))["value"]
        success = {"C": True, "I": False}.get(value) if isinstance(value, str) else None
        calls = [
            [call["function"], json.dumps(call["arguments"], sort_keys=True, separators=(",", ":"))]
            for m in messages
            for call in m.get("tool_calls") or []
        ]
        rows.append((user["content"], said[-1]["content"], header["eval"]["model"], success, calls))
    return sorted(rows, key=repr)


def test_each_sample_of_each_log_is_one_trace(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    shutil.copytree(DATA, folder)
    db = tmp_path / "i.duckdb"
    assert main(["score", str(folder), "--db", str(db), "--no-embedder"]) == 0
    files = query_rows(db, "SELECT regexp_extract(path, '[^/]+$'), status, rows_read FROM files")
    counts = {path.name: len(_samples(path)[1]) for path in DATA.iterdir()}
    assert sorted(files) == sorted((name, "loaded", n) for name, n in counts.items())
    for path in DATA.iterdir():
        got = query_rows(
            db,
            "SELECT objective, result_summary, agent_id, success, "
            "list_transform(list_filter(steps, s -> s.type = 'tool_call'), "
            "  s -> [s.tool_name, s.input]) "
            f"FROM traces WHERE source_file LIKE '%{path.name}'",
        )
        assert sorted(got, key=repr) == _expected(path), path.name
    # the labels are there to measure against: C and I, and the metric-only sample unknown
    assert query_rows(
        db,
        "SELECT count(*) FILTER (success), count(*) FILTER (NOT success), "
        "count(*) FILTER (success IS NULL) FROM traces",
    ) == [(5, 2, 1)]


def test_a_failed_tool_call_of_a_log_is_a_failure(tmp_path: Path) -> None:
    """Inspect records a failed call as the tool message's `error`: the result the trace
    keeps is the error, written as one (`{"error": ...}`, which the levels read as a failed
    call), and the call counts as failed (a retry of it is error recovery)."""
    header, (sample,) = _samples(DATA / "log_message_deduplication.eval")
    messages = sample["messages"]
    first_result = next(i for i, m in enumerate(messages) if m["role"] == "tool")
    failed = {
        **messages[first_result],
        "content": "",
        "error": {"type": "timeout", "message": "timed out"},
    }
    log = {
        **header,
        "samples": [
            {
                **sample,
                "messages": [*messages[:first_result], failed, *messages[first_result + 1 :]],
            }
        ],
    }
    path = tmp_path / "failed.json"
    path.write_text(json.dumps(log))
    db = tmp_path / "f.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    ((types, observation),) = query_rows(
        db,
        "SELECT list_transform(steps, s -> s.type), "
        "list_filter(steps, s -> s.type = 'observation')[1].content FROM traces",
    )
    assert json.loads(observation) == {"error": "timed out"}
    assert types.count("error_recovery") == 1 and types.count("tool_call") == 4


def test_files_that_are_no_eval_log_are_refused_with_their_reason(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "other.eval", "w") as archive:
        archive.writestr("notes.txt", "not a log")
    (tmp_path / "truncated.eval").write_bytes((DATA / "log_streaming.eval").read_bytes()[:900])
    db = tmp_path / "n.duckdb"
    assert main(["score", str(tmp_path), "--db", str(db), "--no-embedder"]) == 1
    reasons = dict(query_rows(db, "SELECT regexp_extract(path, '[^/]+$'), reason FROM files"))
    assert "no readable header.json" in reasons["other.eval"]
    assert "not a readable zip" in reasons["truncated.eval"]
    assert query_rows(db, "SELECT count(*) FROM traces") == [(0,)]


def test_a_sample_too_deep_or_with_a_lone_surrogate_is_quarantined_alone(tmp_path: Path) -> None:
    """The checks every chat record gets, on what the trace keeps (the messages): the sample,
    not the log, is rejected, by number; nesting in what is not read (its store) is no fault."""
    header, samples = _samples(DATA / "2025-05-12T20-28-13-04-00_popularity.json")
    deep: Any = "x"
    for _ in range(120):
        deep = [deep]
    samples[0]["messages"][1]["content"] = [{"type": "text", "text": "t", "deep": deep}]
    samples[2]["store"] = {"deep": deep}
    samples[1]["messages"][1]["content"] = "bad \udc00 text"
    path = tmp_path / "log.json"
    path.write_text(json.dumps({**header, "samples": samples}))
    db = tmp_path / "d.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    reasons = [reason for (reason,) in query_rows(db, "SELECT reason FROM quarantine ORDER BY 1")]
    assert len(reasons) == 2
    assert "sample 2 holds a lone UTF-16 surrogate" in reasons[1]
    assert "sample 1 nests arrays and objects more than 100 levels deep" in reasons[0]
    assert query_rows(db, "SELECT count(*) FROM traces") == [(1,)]
