"""AgentBench's own outputs (tests/data/agentbench, in AgentBench's layout
`<run>/<agent>/<task>/`: gemini-2.0 on MedAgentBench as AgentBench wrote `runs.jsonl` and
`error.jsonl`, and llama-3.3's graded `overall.json`) score with no format flag: each sample one
trace, its prompt's `Question:` the objective, each `GET` and `POST` action a call whose result
is the next user turn, `FINISH([...])` the answer, a sample that did not complete a failed run,
a completed one unknown unless graded; each line of error.jsonl (no history) one quarantined
record; the folders name the agent and the task, so the samples of two agents are two traces
each. Expectations are read from the raw files here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "agentbench"
GEMINI = DATA / "Jan17v1" / "gemini-2.0" / "medagentbench-std"
LLAMA = DATA / "Jan17v1" / "llama-3.3" / "medagentbench-std"


def _lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (GEMINI / name).read_text().splitlines() if line]


def _graded() -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = json.loads((LLAMA / "overall.json").read_text())["custom"][
        "raw_results"
    ]
    return results


def _expected(sample: dict[str, Any]) -> tuple[Any, ...]:
    history = sample["output"]["history"]
    prompt = history[0]["content"]
    question = prompt[prompt.rindex("Question:") + len("Question:") :].strip()
    actions = [
        re.sub(r"^```\w*\n|\n?```\s*$", "", turn["content"].strip()).strip()
        for turn in history
        if turn["role"] == "agent"
    ]
    calls = [action.split(" ", 1)[0] for action in actions if action.startswith(("GET ", "POST "))]
    finished = [a[len("FINISH(") : -1] for a in actions if a.startswith("FINISH(")]
    status = sample["output"]["status"]
    return (
        sample["index"],
        question,
        finished[-1] if finished else None,
        None if status == "completed" else False,
        calls,
    )


def test_each_sample_is_one_trace_and_each_error_line_one_quarantined_record(
    tmp_path: Path,
) -> None:
    db = tmp_path / "a.duckdb"

    assert main(["score", str(GEMINI), "--db", str(db), "--no-embedder"]) == 0

    samples = _lines("runs.jsonl")
    found = query_rows(
        db,
        "SELECT row_number, objective, result_summary, success, "
        "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
        "  s -> s.tool_name) "
        "FROM traces ORDER BY row_number",
    )
    expected = [_expected(sample) for sample in samples]
    # each sample in the file's order: its question, outcome and calls
    assert [(row[0], row[1], row[3], row[4]) for row in found] == [
        (place, row[1], row[3], row[4]) for place, row in enumerate(expected, 1)
    ]
    # a sample that finished answers what it gave FINISH
    answered = [(place, row[2]) for place, row in enumerate(expected, 1) if row[2] is not None]
    assert answered and all(found[place - 1][2] == answer for place, answer in answered)
    assert {row[3] for row in expected} == {None, False}
    errors = _lines("error.jsonl")
    assert all(line["output"]["history"] is None for line in errors)
    assert query_rows(db, "SELECT count(*) FROM quarantine") == [(len(errors),)]


def test_the_graded_samples_of_overall_json_are_traces_with_their_verdicts(
    tmp_path: Path,
) -> None:
    db = tmp_path / "a.duckdb"

    assert main(["score", str(LLAMA / "overall.json"), "--db", str(db), "--no-embedder"]) == 0

    graded = _graded()
    verdict = {"completedCorrect": True, "completedIncorrect": False}
    expected = [
        (place, verdict.get(result["status"], False), len(result["history"]))
        for place, result in enumerate(graded, 1)
    ]
    found = query_rows(
        db,
        "SELECT row_number, success, agent_id, task_domain, "
        "len(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery', 'observation'))) "
        "FROM traces ORDER BY row_number",
    )
    assert [(row[0], row[1]) for row in found] == [(row[0], row[1]) for row in expected]
    # every status the file holds is read: correct, incorrect, an invalid action
    assert {result["status"] for result in graded} == {
        "completedCorrect",
        "completedIncorrect",
        "agent invalid action",
    }
    # the folders AgentBench wrote the file in name the agent and the task
    assert {(row[2], row[3]) for row in found} == {("llama-3.3", "medagentbench-std")}


def test_an_output_folder_of_two_agents_keeps_every_sample_of_each(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"

    assert main(["score", str(DATA), "--db", str(db), "--no-embedder"]) == 0

    graded, runs = _graded(), _lines("runs.jsonl")
    # sample 0 of one agent is not sample 0 of the other: nothing is taken for a duplicate
    assert {result["index"] for result in graded} & {sample["index"] for sample in runs}
    assert query_rows(db, "SELECT agent_id, count(*) FROM traces GROUP BY 1 ORDER BY 1") == [
        ("gemini-2.0", len(runs)),
        ("llama-3.3", len(graded)),
    ]
    assert query_rows(db, "SELECT rule, count(*) FROM quarantine GROUP BY 1") == [
        ("malformed_record", len(_lines("error.jsonl")))
    ]


def _runs_line(result: dict[str, Any], at: int) -> str:
    """A line of runs.jsonl as AgentBench writes it for a graded sample (the status before
    grading: `completed`)."""
    status = "completed" if result["status"].startswith("completed") else result["status"]
    output = {**result, "status": status}
    return json.dumps(
        {
            "index": result["index"],
            "error": None,
            "info": None,
            "output": output,
            "time": {"timestamp": at, "str": ""},
        }
    )


def test_runs_jsonl_takes_its_verdicts_from_the_overall_json_beside_it(tmp_path: Path) -> None:
    folder = tmp_path / "outputs" / "run" / "llama-3.3" / "medagentbench-std"
    folder.mkdir(parents=True)
    graded = _graded()
    (folder / "overall.json").write_bytes((LLAMA / "overall.json").read_bytes())
    start = 1_737_150_000_000
    lines = [_runs_line(result, start + 1000 * n) for n, result in enumerate(graded)]
    (folder / "runs.jsonl").write_text("\n".join(lines) + "\n")
    db = tmp_path / "a.duckdb"

    assert main(["score", str(tmp_path / "outputs"), "--db", str(db), "--no-embedder"]) == 0

    found = query_rows(
        db, "SELECT source_file, success, epoch_ms(created_at) FROM traces ORDER BY row_number"
    )
    # one file read, runs.jsonl: overall.json beside it gives its verdicts, not a second copy
    assert {Path(row[0]).name for row in found} == {"runs.jsonl"}
    assert [row[1] for row in found] == [
        result["status"] == "completedCorrect" for result in graded
    ]
    assert [row[2] for row in found] == [start + 1000 * n for n in range(len(graded))]


def test_an_overall_json_too_large_to_peek_whole_is_still_known(tmp_path: Path) -> None:
    document = json.loads((LLAMA / "overall.json").read_text())
    results = document["custom"]["raw_results"]
    copies = [
        {**result, "index": copy * len(results) + result["index"]}
        for copy in range(5)
        for result in results
    ]
    document["custom"]["raw_results"] = copies
    folder = tmp_path / "llama-3.3" / "medagentbench-std"
    folder.mkdir(parents=True)
    (folder / "overall.json").write_text(json.dumps(document))
    assert (folder / "overall.json").stat().st_size > 8 << 20  # past what a peek parses
    db = tmp_path / "a.duckdb"

    assert main(["score", str(folder / "overall.json"), "--db", str(db), "--no-embedder"]) == 0

    assert query_rows(db, "SELECT count(DISTINCT trace_id) FROM traces") == [(len(copies),)]
