"""Phoenix and MLflow exports from public repositories score with no flag (tests/data/SOURCES.md).

MLflow's trace search as its CLI prints it (`{"traces": [...], "next_page_token": ...}`) was
refused as an unrecognised file; each trace is now one run with its task, answer, tool calls
and failed call. Phoenix's spans of an app that made no model or tool call are each
quarantined with the reason, and the run exits 1: nothing scored, nothing silent.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"

# objective -> the answer, the tool calls (name, arguments) in order, failed calls, agent, success
MLFLOW = {
    "What's the weather in Delft?": (
        "It is 14C and cloudy in Delft.",
        [("get_weather", {"city": "Delft"})],
        0,
        "weather_agent",
        True,
    ),
    "And tomorrow?": (
        "It is 14C and cloudy in Delft.",
        [("get_weather", {"city": "Delft"})],
        0,
        "weather_agent",
        True,
    ),
    "How long do refunds take?": ("Refunds take 5 business days.", [], 0, "refund_agent", True),
    "Say hi": ("It is 14C and cloudy in Delft.", [], 0, None, True),  # the fixture's fixed reply
    '{"order_id": "A-1001"}': (  # the agent function's own argument is its task
        None,
        [("lookup_order", {"order_id": "A-1001"})],
        1,
        "order_agent",
        False,
    ),
}

TRACE_SQL = (
    "SELECT objective, nullif(result_summary, ''), "
    "list_transform(list_filter(steps, s -> s.tool_present), s -> [s.tool_name, s.input]), "
    "len(list_filter(steps, s -> s.output_summary LIKE '{\"error\"%')), agent_id, success "
    "FROM traces ORDER BY objective"
)


def test_mlflow_s_trace_search_page_is_one_run_a_trace(tmp_path: Path) -> None:
    db = tmp_path / "mlflow.duckdb"
    name = DATA / "mlflow" / "kitaru-traces-search-3.16.1.json"

    assert main(["score", str(name), "--db", str(db), "--no-embedder"]) == 0

    assert query_rows(db, "SELECT status, rows_read, rows_scored FROM files") == [("loaded", 5, 5)]
    rows = query_rows(db, TRACE_SQL)
    assert [row[0] for row in rows] == sorted(MLFLOW)
    for objective, answer, calls, failed, agent, success in rows:
        wanted = MLFLOW[str(objective)]
        assert answer == wanted[0], objective
        assert [(tool, json.loads(args)) for tool, args in calls] == wanted[1], objective  # type: ignore[union-attr]
        assert (failed, agent, success) == wanted[2:], objective
    reason = query_rows(
        db,
        "SELECT s.output_summary FROM (SELECT unnest(steps) s FROM traces) "
        "WHERE s.output_summary LIKE '{\"error\"%'",
    )
    assert reason == [('{"error":"RuntimeError: Order A-1001 not found"}',)]


def test_phoenix_spans_without_an_agent_step_are_each_quarantined_with_the_reason(
    tmp_path: Path,
) -> None:
    db = tmp_path / "phoenix.duckdb"
    name = DATA / "phoenix" / "aegis-spans-sample.json"
    spans = json.loads(name.read_text())

    assert main(["score", str(name), "--db", str(db), "--no-embedder"]) == 1

    assert query_rows(db, "SELECT rows_read, rows_scored FROM files") == [(12, 0)]
    quarantined = query_rows(db, "SELECT rule, reason FROM quarantine ORDER BY row_number")
    assert [rule for rule, _ in quarantined] == ["empty_trajectory"] * len(spans)
    said = {str(reason).split("OTel trace ")[1].split(",")[0] for _, reason in quarantined}
    assert said == {span["context"]["trace_id"] for span in spans}
    assert all("spans is a model call, a tool call" in str(reason) for _, reason in quarantined)


# OpenInference spans kept as Strands Evals keeps them: objective -> the answer, the tool
# calls (name, arguments) in order, the agent
OPENINFERENCE = {
    "strands-evals-smolagents_live_spans.json": (
        "What is the population of Tokyo?",  # smolagents sent "New task:\n" before it
        "The population of Tokyo is approximately 14 million people as of 2023.",
        [
            ("web_search", {"query": "population of Tokyo"}),
            ("final_answer", {}),
        ],
        "CodeAgent.run",
    ),
    "strands-evals-openai_agents_openinference_live_spans.json": (
        "What is 42 multiplied by 17, then divided by 3?",
        "The result of \\( 42 \\) multiplied by \\( 17 \\), then divided by \\( 3 \\), is **238**.",
        [  # the coordinator's call, then the specialist's calls inside it, slip included
            ("ask_math_specialist", {"query": "42 multiplied by 17, then divided by 3"}),
            ("multiply_numbers", {"a": 42, "b": 17}),
            ("divide_numbers", {"a": 0, "b": 3}),
            ("divide_numbers", {"a": 714, "b": 3}),
        ],
        "coordinator",
    ),
}


def test_openinference_spans_with_their_ids_at_the_top_are_one_run_each(tmp_path: Path) -> None:
    """Spans of two OpenInference instrumentations (smolagents, the OpenAI Agents SDK) as a
    JSON array of span objects with trace_id, span_id, parent_span_id, nanosecond times and
    flat attributes were refused as an unrecognised file; each file is now one run, its tool
    calls' arguments the TOOL spans' input.value (tool.parameters is the tool's schema)."""
    for name, (objective, answer, calls, agent) in OPENINFERENCE.items():
        db = tmp_path / f"{name}.duckdb"
        assert main(["score", str(DATA / "openinference" / name), "--db", str(db)]) == 0
        rows = query_rows(db, TRACE_SQL)
        assert len(rows) == 1, name
        got_objective, got_answer, got_calls, failed, got_agent, success = rows[0]
        assert got_objective == objective
        assert str(got_answer).startswith(answer), got_answer
        arguments = [(tool, json.loads(args)) for tool, args in got_calls]  # type: ignore[union-attr]
        # smolagents wraps a call's arguments as {"args": [...], "kwargs": {...}}
        assert [(t, a.get("kwargs", a)) for t, a in arguments] == calls, name
        assert (failed, got_agent, success) == (0, agent, True), name  # every span status OK
        assert query_rows(db, "SELECT count(*) FROM quarantine") == [(0,)]


def test_google_adk_s_own_spans_are_one_run_with_its_gemini_request_and_reply(
    tmp_path: Path,
) -> None:
    """Google ADK's tracing keeps a model call's Gemini request and reply on its `call_llm` span
    (`gcp.vertex.agent.llm_request` / `llm_response`, no operation name) and a tool call's
    arguments and result in `gcp.vertex.agent.tool_call_args` / `tool_response`: the run was
    quarantined `missing_objective`. Its objective is the request's first user message, its
    answer the last reply's text; the `generate_content` spans under each call hold no text."""
    name = "strands-evals-adk_live_spans.json"
    db = tmp_path / "adk.duckdb"
    assert main(["score", str(DATA / "openinference" / name), "--db", str(db)]) == 0
    ((objective, answer, calls, failed, agent, success),) = query_rows(db, TRACE_SQL)
    assert objective == "What is 15 multiplied by 37?"
    assert answer == "15 multiplied by 37 is 555."
    assert [(tool, json.loads(args)) for tool, args in calls] == [  # type: ignore[union-attr]
        ("calculator", {"expression": "15 * 37"})
    ]
    assert (failed, agent, success) == (0, "math_agent", None)  # every status UNSET: unknown
    steps = query_rows(db, "SELECT [s.type for s in steps], steps[1].output_summary FROM traces")
    assert steps == [(["tool_call", "thought"], '{"result": "555"}')]
    assert query_rows(db, "SELECT count(*) FROM quarantine") == [(0,)]
