"""GenAI content that instrumentations keep in OpenTelemetry log records, read onto the spans
they name (`storage.spans.otlp_logs`). The files are real recordings of Google ADK 2.10 whose
spans hold no message (its `EVENT_ONLY` content modes: each model call's messages only in a
`gen_ai.client.inference.operation.details` log record), from agentevals' corpus, with the
turns its authors read from the telemetry beside each (`*.truth.json`): the expectations come
from those files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "agentevals-otlp"
FIXTURES = sorted(path for path in DATA.glob("v2*/*.json") if not path.name.endswith(".truth.json"))
KAGENT = DATA / "kagent-v1.0.0-alpha9" / "adk_go_1turn.json"
READ = (
    "SELECT agent_id, objective, result_summary, "
    "list_transform(list_filter(steps, s -> s.type = 'tool_call'), "
    "s -> [s.tool_name, s.input, s.output_summary]) FROM traces"
)


def _expected(path: Path) -> tuple[Any, ...]:
    truth = json.loads(path.with_name(path.stem + ".truth.json").read_text())
    (turn,) = truth["turns"]
    calls = [
        # a failed call's result is the error ({"error": ...}); ADK wraps a result that is
        # not an object as {"result": ...}, which the truth unwraps
        [call["name"], call["args"], "error" if call["is_error"] else call["result"]]
        for call in turn["tool_calls"]
    ]
    return turn["agents"][0], turn["user_text"], turn["final_text"] or "", calls


def _score(path: Path, db: Path) -> tuple[Any, ...]:
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    ((agent, objective, answer, steps),) = query_rows(db, READ)
    calls = []
    for name, given, result in steps:
        said = json.loads(result)
        if isinstance(said, dict) and list(said) in (["error"], ["result"]):
            said = "error" if "error" in said else said["result"]
        calls.append([name, json.loads(given), said])
    return agent, objective, answer, calls


@pytest.mark.parametrize("path", FIXTURES, ids=[f"{p.parent.name}/{p.stem}" for p in FIXTURES])
def test_content_in_log_records_gives_the_task_answer_and_calls(tmp_path: Path, path: Path) -> None:
    assert _score(path, tmp_path / "t.duckdb") == _expected(path)


def test_the_same_spans_without_their_log_records_hold_no_task(tmp_path: Path) -> None:
    # what the records add: the spans alone say no message (quarantined, as before)
    document = json.loads(FIXTURES[0].read_text())
    spans = tmp_path / "spans.json"
    spans.write_text(json.dumps({"resourceSpans": document["resourceSpans"]}))
    db = tmp_path / "t.duckdb"
    assert main(["score", str(spans), "--db", str(db), "--no-embedder"]) == 1
    assert query_rows(db, "SELECT rule FROM quarantine") == [("missing_objective",)]


def test_a_collector_file_of_span_and_log_lines_reads_as_the_document(tmp_path: Path) -> None:
    # the Collector's file exporter in both pipelines: one request a line, logs after spans
    path = next(p for p in FIXTURES if p.stem == "S2")
    document = json.loads(path.read_text())
    lines = tmp_path / "otel.jsonl"
    requests = [{"resourceSpans": document["resourceSpans"]}]
    requests += [{"resourceLogs": [logs]} for logs in document["resourceLogs"]]
    lines.write_text("".join(json.dumps(request) + "\n" for request in requests))
    assert _score(lines, tmp_path / "t.duckdb") == _expected(path)


def test_the_collector_s_logs_file_beside_its_traces_file(tmp_path: Path) -> None:
    # the Collector's logs pipeline written to a file of its own: `import otel` and `score`
    # over the folder read the records with the spans they name; alone, they are said not read
    path = next(p for p in FIXTURES if p.stem == "S2")
    document = json.loads(path.read_text())
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "traces.jsonl").write_text(json.dumps({"resourceSpans": document["resourceSpans"]}))
    (folder / "logs.jsonl").write_text(json.dumps({"resourceLogs": document["resourceLogs"]}))
    out = tmp_path / "o.parquet"
    assert main(["import", "otel", str(folder), "--out", str(out)]) == 0
    (trace,) = pl.read_parquet(out).to_dicts()
    assert (trace["task"]["objective"], trace["outcome"]["result_summary"]) == _expected(path)[1:3]

    together = tmp_path / "together.duckdb"
    assert _score(folder, together) == _expected(path)
    files = query_rows(
        together,
        "SELECT regexp_extract(path, '[a-z]+.jsonl'), status, rows_read FROM files ORDER BY 1",
    )
    assert files == [("logs.jsonl", "loaded", 0), ("traces.jsonl", "loaded", 1)]

    alone = tmp_path / "o2.parquet"
    assert main(["import", "otel", str(folder / "logs.jsonl"), "--out", str(alone)]) == 1
    report = pl.read_csv(tmp_path / "o2.import-report.csv")
    ((rule, reason),) = report.select("rule", "reason").rows()
    assert rule == "unread_log_records" and "of 3 calls whose spans this file" in reason
    db = tmp_path / "t.duckdb"
    assert main(["score", str(folder / "logs.jsonl"), "--db", str(db), "--no-embedder"]) == 1
    ((reason,),) = query_rows(db, "SELECT reason FROM files")
    assert "log records (OTLP `resourceLogs`) without spans" in reason


def test_one_request_line_holding_spans_and_log_records_reads_as_the_document(
    tmp_path: Path,
) -> None:
    path = next(p for p in FIXTURES if p.stem == "S2")
    line = tmp_path / "one.jsonl"
    line.write_text(json.dumps(json.loads(path.read_text())) + "\n")
    assert _score(line, tmp_path / "t.duckdb") == _expected(path)


def _tool_spans(path: Path) -> list[tuple[int, str]]:
    """The file's `execute_tool` spans of a named tool: start time and own arguments."""
    found = []
    for resource in json.loads(path.read_text())["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                said = {a["key"]: a["value"].get("stringValue") for a in span["attributes"]}
                if (
                    said.get("gen_ai.operation.name") == "execute_tool"
                    and said.get("gen_ai.tool.name", "(").isidentifier()
                ):
                    start = int(span["startTimeUnixNano"])
                    found.append((start, said["gcp.vertex.agent.tool_call_args"]))
    return sorted(found)


def test_a_tool_span_s_own_arguments_are_kept_beside_log_records(tmp_path: Path) -> None:
    # kagent's Go ADK runtime (agentevals' recording): its log records' content is elided,
    # its tool spans say their own arguments; the model asked for the second call first, so
    # pairing the messages' calls by order would swap the two
    db = tmp_path / "t.duckdb"
    assert main(["score", str(KAGENT), "--db", str(db), "--no-embedder"]) == 0
    ((inputs,),) = query_rows(
        db,
        "SELECT list_transform(list_filter(steps, s -> s.type = 'tool_call'), s -> s.input) "
        "FROM traces",
    )
    assert inputs == [arguments for _, arguments in _tool_spans(KAGENT)]
    assert len(inputs) == 2
