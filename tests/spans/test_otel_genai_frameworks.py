"""OTel GenAI spans of seven agent frameworks, as any-agent writes them (tests/data/SOURCES.md):
each file scored with `tracegrade score FILE --db DB` and no other flag is one trace with the
user's task as objective, the run's final output as answer, and the tool calls in the order
they ran. Before, every trace was rejected `missing_objective`: `call_llm` was not taken for a
model call, and `gen_ai.tool.args` and `gen_ai.output` were not read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "any-agent" / "genai"
TASK = (
    "Find what year it is in the America/New_York timezone and write the value (single "
    "number) to a file. Finally, return a list of the steps you have taken."
)
# The tool calls of each run, in the order they started (the frameworks that end with a
# final-answer tool call it too).
TOOLS = {
    "AGNO": ["get_current_time", "write_file"],
    "GOOGLE": ["get_current_time", "write_file", "final_output"],
    "LANGCHAIN": ["get_current_time", "write_file"],
    "LLAMA_INDEX": ["get_current_time", "write_file", "final_output"],
    "OPENAI": ["get_current_time", "write_file"],
    "SMOLAGENTS": ["get_current_time", "write_file", "final_answer"],
    "TINYAGENT": ["get_current_time", "write_file", "final_answer"],
}


@pytest.mark.parametrize("framework", sorted(TOOLS))
def test_each_framework_s_run_is_one_trace_as_written(tmp_path: Path, framework: str) -> None:
    source = DATA / f"{framework}_trace.json"
    shutil.copy(source, tmp_path / source.name)
    db = tmp_path / "g.duckdb"
    assert main(["score", str(tmp_path / source.name), "--db", str(db), "--no-embedder"]) == 0
    ((objective, answer, agent, success, calls, failed),) = query_rows(
        db,
        "SELECT objective, result_summary, agent_id, success, "
        "list_transform(list_filter(steps, s -> s.type = 'tool_call'), "
        "  s -> [s.tool_name, s.input]), "
        "len(list_filter(steps, s -> s.type = 'error_recovery')) FROM traces",
    )
    # smolagents sends "New task:\n" + the task; the objective is the task, as elsewhere
    assert objective == TASK
    final = json.loads(source.read_text())["final_output"]
    assert json.loads(answer) == final  # the run's final_output, not a model call's text
    assert agent == "any_agent"
    assert success is None  # the root's status is UNSET: no outcome recorded (SPEC 1)
    assert [name for name, _ in calls] == TOOLS[framework]
    # The arguments are gen_ai.tool.args, as the model gave them.
    assert json.loads(calls[0][1]) == {"timezone": "America/New_York"}
    assert json.loads(calls[1][1]) == {"text": "2025"}
    assert failed == 0


def test_all_seven_in_one_folder_are_seven_traces(tmp_path: Path) -> None:
    shutil.copytree(DATA, tmp_path / "runs")
    db = tmp_path / "all.duckdb"
    assert main(["score", str(tmp_path / "runs"), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT count(*), count(DISTINCT trace_id) FROM traces") == [(7, 7)]
    assert query_rows(db, "SELECT count(*) FROM quarantine") == [(0,)]


FACTORY = Path(__file__).resolve().parents[1] / "data" / "agent-factory"


def test_a_one_line_agent_trace_and_span_lines_as_agent_factory_writes_them(
    tmp_path: Path,
) -> None:
    """agent-factory's AgentTrace is one line (read as JSON lines, it was one no_spans
    rejection), and its top span's parent was recorded elsewhere: final_output is still the
    answer. Its exporter's span lines hold no user message: quarantined saying so."""
    shutil.copytree(FACTORY, tmp_path / "runs")
    db = tmp_path / "f.duckdb"
    assert main(["score", str(tmp_path / "runs"), "--db", str(db), "--no-embedder"]) == 0
    ((objective, answer, agent, tools),) = query_rows(
        db,
        "SELECT objective, result_summary, agent_id, list_transform(list_filter(steps, "
        "s -> s.type = 'tool_call'), s -> s.tool_name) FROM traces",
    )
    document = json.loads((FACTORY / "agent_factory_trace.json").read_text())
    assert objective.startswith("Workflow that takes an input web URL and returns a summary")
    assert answer == document["final_output"]
    assert (agent, tools) == ("any_agent", ["read_file"])
    ((rule, reason),) = query_rows(db, "SELECT rule, reason FROM quarantine")
    assert rule == "missing_objective" and "no span of the trace carries a user message" in reason


JULY_2025 = Path(__file__).resolve().parents[1] / "data" / "any-agent" / "2025-07"


@pytest.mark.parametrize("framework", ["OPENAI", "SMOLAGENTS"])
def test_an_empty_final_output_leaves_the_answer_to_the_run(tmp_path: Path, framework: str) -> None:
    """any-agent of July 2025 wrote `final_output: {}` for a structured answer; read as the
    answer it was "{}". The answer is then what the run gave: the argument of smolagents'
    `final_answer` call, the OpenAI agent's last model output."""
    source = JULY_2025 / f"{framework}_trace.json"
    shutil.copy(source, tmp_path / source.name)
    db = tmp_path / "j.duckdb"
    spans = json.loads(source.read_text())["spans"]
    assert json.loads(source.read_text())["final_output"] == {}

    assert main(["score", str(tmp_path / source.name), "--db", str(db), "--no-embedder"]) == 0

    ((answer,),) = query_rows(db, "SELECT result_summary FROM traces")
    if framework == "SMOLAGENTS":
        call = next(s for s in spans if s["name"] == "execute_tool final_answer")
        wanted = json.loads(call["attributes"]["gen_ai.tool.args"])["answer"]
    else:
        model = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "call_llm"]
        wanted = model[-1]["attributes"]["gen_ai.output"]
    assert answer == wanted and json.loads(answer)["steps"][0]["number"] == 1
