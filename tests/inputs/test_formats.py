"""One registry of trace formats (storage/inputs/formats.py): `tracegrade score FILE` reads each file
in the format its content shows, with no flag, and a file that no format recognises is one
quarantine row that says what it holds and which formats exist, never recorded as loaded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import query_rows

from storage.inputs.formats import FORMATS, AutoFormat, file_format
from tracegrade.cli import main

ROOT = Path(__file__).resolve().parents[2]
SPANS = ROOT / "tests" / "data" / "any-agent" / "OPENAI.json"
TAU_BENCH = ROOT.parent / "shared" / "data" / "tau-bench" / "gpt-4o-airline.json"

TRACE = {
    "@context": "https://openknowledgepulse.org/schema/v1",
    "@type": "ReasoningTrace",
    "id": "kp:trace:550e8400-e29b-41d4-a716-446655440000",
    "metadata": {"created_at": "2026-01-05T09:30:00Z", "task_domain": "code", "success": True},
    "task": {"objective": "Review PR #42 for security issues"},
    "steps": [
        {"step_id": 0, "type": "thought", "content": "Analyzing diff for injection vectors"},
        {"step_id": 1, "type": "tool_call", "tool": {"name": "github_pr_read"}},
    ],
    "outcome": {"result_summary": "No injection found", "confidence": 0.9},
}


def chosen(path: Path) -> str | None:
    reader = file_format()
    assert isinstance(reader, AutoFormat)
    entry = reader.chosen(path)
    return None if entry is None else entry.name


def test_each_file_is_recognised_by_its_content(tmp_path: Path) -> None:
    own = tmp_path / "own.jsonl"
    own.write_text(json.dumps(TRACE) + "\n")
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps([TRACE], indent=2))
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"resourceSpans": []}, indent=2))
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"traj": [{"role": "user", "content": "hi"}], "reward": 1}) + "\n")
    assert [chosen(path) for path in (own, pretty, request, SPANS, chat)] == [
        "traces",
        "traces",
        "otel",
        "otel",
        "chat",
    ]


def test_a_folder_of_several_formats_scores_with_no_flag(tmp_path: Path) -> None:
    inputs = tmp_path / "exports"
    inputs.mkdir()
    (inputs / "own.jsonl").write_text(json.dumps(TRACE) + "\n")
    shutil.copy(SPANS, inputs / "OPENAI.json")
    db = tmp_path / "t.duckdb"
    assert main(["score", str(inputs), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT status, rows_scored FROM files ORDER BY path") == [
        ("loaded", 1),
        ("loaded", 1),
    ]
    objectives = query_rows(db, "SELECT objective FROM traces ORDER BY objective")
    assert objectives == [
        ("Review PR #42 for security issues",),
        ("what's a good brewery near Aspinwall PA? Write the answer to /projects/hi.txt",),
    ]


@pytest.mark.parametrize(
    ("name", "content", "seen"),
    [
        ("other.json", '[{"foo": 1, "bar": 2}]', "a JSON array of 1 objects with keys foo, bar"),
        ("empty.json", "[]", "an empty JSON array"),
        ("table.json", "a,b\n1,2\n", "text whose first line is 'a,b'"),
        # shaped like a format's record, but its type is no text (detection once raised)
        (
            "typed.jsonl",
            '{"type": ["x"], "payload": {}, "timestamp": 1}\n',
            "a JSON object with keys type, payload, timestamp",
        ),
        (
            "run.jsonl",
            '{"id": "r", "run_type": {"a": 1}, "parent_run_id": null, "trace_id": "t"}\n',
            "a JSON object with keys id, run_type, parent_run_id, trace_id",
        ),
        (
            # A TapeAgents tape (ServiceNow/TapeAgents' GAIA agent): `steps` of a `kind`, no
            # trace of tracegrade's own (before 2026-12-07 taken for one and quarantined
            # missing_id, as if an id were all it lacked)
            "tape.json",
            json.dumps(
                {
                    "metadata": {"id": "t-1", "author": "web_agent", "result": "11"},
                    "context": None,
                    "steps": [{"kind": "question", "content": "How many?", "metadata": {}}],
                }
            ),
            "a JSON object with keys metadata, context, steps",
        ),
        (
            # A Langfuse dataset export: dataset items, which hold no trace.
            "dataset.json",
            json.dumps(
                [
                    {
                        "id": "item-1",
                        "datasetId": "ds-1",
                        "input": {"question": "2 + 2?"},
                        "expectedOutput": "4",
                        "metadata": None,
                        "sourceTraceId": None,
                        "status": "ACTIVE",
                    }
                ]
            ),
            "a JSON array of 1 objects with keys id, datasetId, input, expectedOutput",
        ),
    ],
)
def test_a_file_no_format_recognises_is_one_line_and_never_loaded(
    tmp_path: Path, name: str, content: str, seen: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    db = tmp_path / "u.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 1
    assert query_rows(db, "SELECT status, rule FROM files") == [
        ("quarantined", "unrecognised_file")
    ]
    ((reason,),) = query_rows(db, "SELECT reason FROM quarantine")
    assert f"it holds {seen}" in reason
    # which formats exist, and how to name one, in a line short enough to read in a summary
    assert ", ".join(entry.name for entry in FORMATS) in reason
    assert "--format" in reason and "tracegrade score --help" in reason and len(reason) < 800


@pytest.mark.parametrize(
    ("name", "record", "said"),
    [
        (
            "stream.jsonl",
            {"type": "system", "subtype": "init", "session_id": "s", "tools": [], "model": "m"},
            "Claude Code's `claude -p --output-format stream-json`",
        ),
        ("exec.jsonl", {"type": "thread.started", "thread_id": "t"}, "codex exec --json"),
        ("response.json", {"id": "r", "object": "response", "output": []}, "Responses API"),
        ("report.json", {"total_instances": 2, "resolved_ids": ["a"]}, "SWE-bench evaluation"),
        ("preds.json", {"a__b-1": {"instance_id": "a__b-1", "model_patch": ""}}, "predictions"),
        ("ui_messages.json", [{"ts": 1, "type": "say", "say": "text"}], "Cline task's UI"),
        (  # Langfuse's blob storage export: its traces and scores tables beside observations
            "traces.jsonl",
            {
                **dict.fromkeys(("id", "name", "user_id", "session_id", "input", "output"), "x"),
                **{"timestamp": "2026-12-07 00:00:00.000", "project_id": "p"},
                **{"bookmarked": False, "public": False, "tags": []},
            },
            "the blob export's observations table",
        ),
        (  # Langfuse's UI export of its traces table (ccamacho/xllm, January 2026)
            "lf-traces-export.json",
            [
                {"id": "01de", "timestamp": "2026-01-14T13:15:38.089Z", "name": "a2a-router"}
                | {"userId": None, "sessionId": None, "tags": [], "bookmarked": False}
                | {"input": None, "output": None, "metadata": {}}
            ],
            "GET /api/public/traces/{id}",
        ),
        (
            "scores.jsonl",
            {"id": "s", "trace_id": "t", "name": "correctness", "value": 1, "data_type": "BOOLEAN"},
            "Labels from Langfuse scores",
        ),
    ],
)
def test_a_file_of_a_kind_that_holds_no_run_says_what_it_is_and_what_to_give(
    tmp_path: Path, name: str, record: Any, said: str
) -> None:
    # files that lie beside runs, or that users take for runs: one line that names them
    path = tmp_path / name
    text = json.dumps(record)
    path.write_text(text + "\n" if name.endswith(".jsonl") else text)
    db = tmp_path / "k.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 1
    assert query_rows(db, "SELECT status, rule FROM files") == [
        ("quarantined", "unrecognised_file")
    ]
    ((reason,),) = query_rows(db, "SELECT reason FROM quarantine")
    assert said in reason and reason.startswith("no format reads the file: it is ")


def test_a_csv_named_as_such_is_refused_before_anything_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "table.csv"
    path.write_text("a,b\n1,2\n")
    db = tmp_path / "c.duckdb"
    assert main(["score", str(path), "--db", str(db)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has extension '.csv'" in err[0]
    assert not db.exists()


@pytest.mark.skipif(not TAU_BENCH.is_file(), reason=f"the tau-bench file is not at {TAU_BENCH}")
def test_chat_trajectories_score_as_written_and_as_imported(tmp_path: Path) -> None:
    """tau-bench's trajectories scored with no flag give the scores of `import chat` then
    `score` on the Parquet it writes."""
    records = json.loads(TAU_BENCH.read_text())[:5]
    source = tmp_path / "airline.json"
    source.write_text(json.dumps(records))
    direct = tmp_path / "direct.duckdb"
    assert main(["score", str(source), "--db", str(direct), "--no-embedder"]) == 0
    imported = tmp_path / "imported.duckdb"
    parquet = tmp_path / "airline.parquet"
    assert main(["import", "chat", str(source), "--out", str(parquet)]) == 0
    assert main(["score", str(parquet), "--db", str(imported), "--no-embedder"]) == 0
    sql = "SELECT trace_id, objective, n_steps, score FROM latest_scores JOIN traces USING (trace_id) ORDER BY trace_id"
    assert query_rows(direct, sql) == query_rows(imported, sql)
    assert len(query_rows(direct, sql)) == 5


def test_score_offers_every_format_of_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    from storage.inputs.formats import format_names
    from tracegrade.cli.app import main

    with pytest.raises(SystemExit):
        main(["score", "x", "--format", "no-such-format"])
    error = capsys.readouterr().err
    offered = error.split("choose from ", 1)[1].rstrip(")\n").replace("'", "").split(", ")
    assert offered == ["auto", *format_names()]
