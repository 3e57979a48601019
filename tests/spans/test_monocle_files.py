"""Monocle's trace files score with no flag (tests/data/SOURCES.md: its file exporter's output
for Microsoft Agent Framework, LangGraph, Google ADK, Strands and CrewAI agents). The expectations are
read from each file here with `json`: the request span's (`agentic.turn`, before 0.6
`agentic.request`) input and response are the objective and the answer, the
`agentic.tool.invocation` spans in time order the tool calls (the tool entity's name, the
`data.input` and `data.output` events), a span with status ERROR a failed call, and the first
agent invoked the agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "monocle"
FILES = sorted(DATA.glob("*.json"))

_TRACE = (
    "SELECT objective, result_summary, agent_id, "
    "list_transform(list_filter(steps, s -> s.type = 'tool_call'), "
    "  s -> [s.tool_name, s.input, s.output_summary]), "
    "list_transform(list_filter(steps, s -> s.type = 'tool_call'), "
    "  s -> s.output_summary LIKE '{\"error\"%') FROM traces"
)


def _event(span: dict[str, Any], name: str) -> dict[str, Any]:
    return next((e["attributes"] for e in span["events"] if e["name"] == name), {})


def _entity(span: dict[str, Any], kind: str) -> str:
    attributes = span["attributes"]
    index = next(n for n in range(1, 10) if attributes.get(f"entity.{n}.type", "").startswith(kind))
    return str(attributes[f"entity.{index}.name"])


def _one(value: Any) -> Any:
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def _expected(spans: list[dict[str, Any]]) -> tuple[Any, ...]:
    spans = sorted(spans, key=lambda s: s["start_time"])
    typed = {s["attributes"].get("span.type"): s for s in spans}
    request = typed.get("agentic.turn") or typed["agentic.request"]
    agent = next(s for s in spans if s["attributes"].get("span.type") == "agentic.invocation")
    tools = [s for s in spans if s["attributes"].get("span.type") == "agentic.tool.invocation"]
    calls = [
        [
            _entity(tool, "tool."),
            _one(_event(tool, "data.input")["input"]),
            _event(tool, "data.output")["response"],
        ]
        for tool in tools
    ]
    return (
        _one(_event(request, "data.input")["input"]),
        _event(request, "data.output")["response"],
        _entity(agent, "agent."),
        calls,
        [tool["status"]["status_code"] == "ERROR" for tool in tools],
    )


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_a_monocle_file_is_one_trace_as_its_spans_say(path: Path, tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT status, rows_read FROM files") == [("loaded", 1)]
    assert query_rows(db, _TRACE) == [_expected(json.loads(path.read_text()))]


def test_model_replies_are_thoughts_and_the_mcp_request_is_no_second_call(
    tmp_path: Path,
) -> None:
    """LangGraph's run: each model reply that says something is a thought (a reply that asks
    for a tool, `{"ai": {"name": ...}}`, says nothing), in time order with the tool calls;
    the weather tool's MCP request inside its call is not a call of its own."""
    path = DATA / "langgraph-travel-agent.json"
    spans = sorted(json.loads(path.read_text()), key=lambda s: s["start_time"])
    expected = []
    for span in spans:
        kind = span["attributes"].get("span.type")
        if kind == "agentic.tool.invocation":
            expected.append(("tool_call", None))
        elif kind == "inference.framework":
            reply = json.loads(_event(span, "data.output")["response"])["ai"]
            if isinstance(reply, str):
                expected.append(("thought", reply))
    db = tmp_path / "t.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    steps = query_rows(
        db,
        "SELECT s.type, CASE WHEN s.type = 'thought' THEN s.content END "
        "FROM (SELECT unnest(steps) AS s FROM traces)",
    )
    assert steps == expected
    assert sum(kind == "tool_call" for kind, _ in expected) == 3


def test_a_file_cut_off_while_it_was_written_gives_its_complete_spans(tmp_path: Path) -> None:
    """Monocle writes `[` when it opens a trace's file and `]` when it closes it: a process
    killed between leaves an array that never closes, cut inside a span. The complete spans
    are read, as the same spans in a closed array are, and the cut tail is rejected with its
    place; the file was refused whole as not JSON."""
    text = (DATA / "langgraph-travel-agent.json").read_text()
    cut_at = int(len(text) * 0.6)
    decoder, complete, at = json.JSONDecoder(), [], text.index("[") + 1
    while True:
        at = len(text) - len(text[at:].lstrip(" \n,"))
        value, end = decoder.raw_decode(text, at)
        if end > cut_at:
            break
        complete.append(value)
        at = end
    cut = tmp_path / "cut.json"
    cut.write_text(text[:cut_at])
    closed = tmp_path / "closed.json"
    closed.write_text(json.dumps(complete, indent=4))
    found = {}
    for path in (cut, closed):
        db = tmp_path / f"{path.stem}.duckdb"
        assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
        found[path.stem] = query_rows(db, _TRACE)
    assert found["cut"] == found["closed"] and len(found["cut"]) == 1
    reasons = query_rows(tmp_path / "cut.duckdb", "SELECT rule, reason FROM quarantine")
    assert len(reasons) == 1 and reasons[0][0] == "malformed_record"
    assert f"after {len(complete)} complete elements" in reasons[0][1]


def test_a_crew_given_no_input_has_its_first_task_as_the_objective(tmp_path: Path) -> None:
    """A CrewAI crew of three agents (tests/data/monocle/crew) kicked off with no input: its
    request span holds no task, so the first model call's prompt was the objective, CrewAI's
    composition of the first task ("Current Task: ...", then the expected output and
    instructions). The task alone is the objective now, read from the file: the first agent's
    input."""
    path = DATA / "crew" / "crewai-travel-crew.json"
    spans = sorted(json.loads(path.read_text()), key=lambda s: s["start_time"])
    agents = [s for s in spans if s["attributes"].get("span.type") == "agentic.invocation"]
    first_task = _one(_event(agents[0], "data.input")["input"])
    db = tmp_path / "t.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    rows = query_rows(db, _TRACE)
    assert len(rows) == 1
    objective, answer, _, calls, _ = rows[0]
    assert objective == first_task == "Book a hotel room at Marriott in New York for 2 nights."
    request = next(s for s in spans if s["attributes"].get("span.type") == "agentic.request")
    assert answer == _event(request, "data.output")["response"]
    assert [name for name, _, _ in calls] == ["book_hotel", "book_flight"]
