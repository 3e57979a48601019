"""smolagents' own records of a run (tests/data/SOURCES.md: lines of its benchmark harness's
output, gpt-4o with a tool-calling and a code agent), scored with `tracegrade score FILE --db
DB` and no other flag. Before 2026-12-07 a benchmark line was one `unrecognised_file` line,
and the memory's messages, read as chat, were rejected for their `tool-call` role. The
expectations are read from the files here with `json`, `ast` and string splits, not with the
code under test."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path
from typing import Any

from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "smolagents"

_TRACES = (
    "SELECT objective, result_summary, agent_id, success, "
    "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
    "  s -> s.tool_name), "
    "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content) "
    "FROM traces ORDER BY created_at"
)


def _text(message: dict[str, Any]) -> str:
    return "\n".join(part["text"] for part in message["content"])


def _expected(run: dict[str, Any]) -> tuple[Any, ...]:
    """The question, the answer, the model, no outcome, the tools called (each `tool-call`'s
    functions, and the tool an error names where no call was recorded), their results."""
    tools, results = [], []
    for message in run["intermediate_steps"]:
        text = _text(message)
        if message["role"] == "tool-call":
            calls = ast.literal_eval(text.split("Calling tools:\n", 1)[1])
            tools += [call["function"]["name"] for call in calls]
        elif message["role"] == "tool-response":
            body = text.split("\n", 1)[1] if text.startswith("Call id: ") else text
            if len(results) == len(tools):  # an error no call was recorded for
                tools.append(body.split("Error executing tool '", 1)[1].split("'", 1)[0])
            results.append(body.removeprefix("Observation:\n"))
    return run["question"], run["answer"], run["model_id"], None, tools, results


def test_each_benchmark_line_is_one_trace_of_its_calls(tmp_path: Path) -> None:
    runs = [
        json.loads(line)
        for name in ("gpt-4o__tool-calling.jsonl", "gpt-4o__code.jsonl")
        for line in (DATA / name).read_text().splitlines()
    ]
    (tmp_path / "runs").mkdir()
    for name in ("gpt-4o__tool-calling.jsonl", "gpt-4o__code.jsonl"):
        shutil.copy(DATA / name, tmp_path / "runs" / name)
    db = tmp_path / "s.duckdb"
    assert main(["score", str(tmp_path / "runs"), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT count(*) FROM quarantine") == [(0,)]
    got = query_rows(db, _TRACES)
    expected = sorted((_expected(run) for run in runs), key=lambda e: e[0])
    assert sorted(got, key=lambda row: row[0]) == expected
    # each failed result is a failed call: three code actions, and the unrecorded call
    ((failed,),) = query_rows(
        db,
        "SELECT count(*) FROM (SELECT unnest(steps) AS s FROM traces) "
        "WHERE s.type = 'observation' AND s.content LIKE 'Error:%'",
    )
    ((recovered,),) = query_rows(
        db,
        "SELECT sum(len(list_filter(steps, s -> s.type = 'error_recovery'))) FROM traces",
    )
    assert failed == 4 and recovered == 4


def test_the_memory_s_messages_alone_read_as_chat(tmp_path: Path) -> None:
    # `agent.write_memory_to_messages()` dumped as a list: the chat mapping reads its roles
    run = json.loads((DATA / "gpt-4o__tool-calling.jsonl").read_text().splitlines()[0])
    path = tmp_path / "memory.json"
    path.write_text(json.dumps([m for m in run["intermediate_steps"]]))
    db = tmp_path / "m.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    ((objective, answer, _, _, tools, _),) = query_rows(db, _TRACES)
    question, answer_given, _, _, expected_tools, _ = _expected(run)
    # the task without "New task:", the answer the final_answer call's argument
    assert (objective, answer, tools) == (question, answer_given, expected_tools)


def test_a_code_action_that_printed_then_failed_is_one_failed_result(tmp_path: Path) -> None:
    # smolagents gives such an action's logs, then its error under the call's id
    run = json.loads((DATA / "gpt-4o__code.jsonl").read_text().splitlines()[0])
    steps = run["intermediate_steps"]
    at = next(i for i, m in enumerate(steps) if _text(m).startswith("Call id: call_1\nError:"))
    error = steps[at]
    logs = {**error, "content": [{"type": "text", "text": "Observation:\nExecution logs:\nhi"}]}
    steps.insert(at, logs)
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(run) + "\n")
    db = tmp_path / "s.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    ((observations,),) = query_rows(
        db,
        "SELECT list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content) "
        "FROM traces",
    )
    first = json.loads(observations[0])["error"]
    assert first == "Execution logs:\nhi\n" + _text(error).split("\n", 1)[1]
    assert len(observations) == 4  # one result a call, as before


def test_odd_records_are_refused_or_quarantined_not_a_crash(tmp_path: Path) -> None:
    # a chat record whose role is an object: rejected with its reason, as before smolagents'
    # roles were read
    chat = tmp_path / "chat.json"
    chat.write_text(
        json.dumps(
            {"messages": [{"role": "user", "content": "hi"}, {"role": {"n": 1}, "content": "x"}]}
        )
    )
    db = tmp_path / "c.duckdb"
    assert main(["score", str(chat), "--db", str(db), "--no-embedder"]) == 1
    assert query_rows(db, "SELECT rule FROM quarantine") == [("malformed_record",)]
    # a harness line whose intermediate_steps are a memory's steps, not messages: no format
    steps = tmp_path / "steps.jsonl"
    steps.write_text(
        json.dumps({"question": "q", "prediction": "a", "intermediate_steps": [{"step": 1}]}) + "\n"
    )
    db = tmp_path / "s.duckdb"
    assert main(["score", str(steps), "--db", str(db), "--no-embedder"]) == 1
    assert query_rows(db, "SELECT rule FROM files") == [("unrecognised_file",)]


def test_the_gaia_example_s_output_is_read_with_its_grading(tmp_path: Path) -> None:
    # open_deep_research's run_gaia.py writes the same messages under its own names:
    # `prediction`, `agent_name`, and its grading `is_correct`
    run = json.loads((DATA / "gpt-4o__tool-calling.jsonl").read_text().splitlines()[0])
    gaia = {k: v for k, v in run.items() if k not in ("answer", "model_id", "agent_action_type")}
    gaia.update(prediction=run["answer"], agent_name="gpt-4o", is_correct=True, task_id="t1")
    path = tmp_path / "gaia.jsonl"
    path.write_text(json.dumps(gaia) + "\n")
    db = tmp_path / "g.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    ((objective, answer, agent, success, tools, _),) = query_rows(db, _TRACES)
    assert (objective, answer, agent, success) == (run["question"], run["answer"], "gpt-4o", True)
    assert tools == _expected(run)[4]
    # the real output: both runs failed before a first step; each is rejected as such, not
    # the whole file refused as of no format
    real = DATA / "generate-traces-02_gaia_gpt4o.jsonl"
    db = tmp_path / "r.duckdb"
    assert main(["score", str(real), "--db", str(db), "--no-embedder"]) == 1
    assert query_rows(db, "SELECT rule, count(*) FROM quarantine GROUP BY 1") == [
        ("empty_trajectory", 2)
    ]


def test_the_gaia_example_s_start_written_as_text_is_the_time(tmp_path: Path) -> None:
    run = json.loads((DATA / "gpt-4o__tool-calling.jsonl").read_text().splitlines()[0])
    real = json.loads((DATA / "generate-traces-02_gaia_gpt4o.jsonl").read_text().splitlines()[0])
    assert isinstance(real["start_time"], str)  # as the example writes it
    path = tmp_path / "gaia.jsonl"
    path.write_text(json.dumps({**run, "start_time": real["start_time"]}) + "\n")
    db = tmp_path / "t.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    ((created,),) = query_rows(db, "SELECT created_at FROM traces")
    assert created.strftime("%Y-%m-%d %H:%M:%S") == real["start_time"]
