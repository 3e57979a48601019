"""Spans from real instrumentation, imported and scored, checked step by step against the run.

A pydantic-ai agent with two tools runs under its built-in OpenTelemetry instrumentation
(FunctionModel, no network); an OpenAI client calls a fake OpenAI-compatible server on
127.0.0.1 under openinference-instrumentation-openai. The SDK's spans are exported through the
official OTLP encoder as the Collector's file exporter writes them, then imported and scored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import polars as pl
import pytest
from otel_helpers import (
    CollectorFileExporter,
    close_agent_loop,  # noqa: F401 (autouse)
    instrumentation,
    tracer_provider,
    weather_agent,
)
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from pipelines.otel_import import import_otel
from pipelines.score import score_traces
from storage.store.duckdb_store import DuckDBStore

QUESTION = "What is the weather in Paris, in Fahrenheit?"
ANSWER = "It is 21 C (69.8 F) in Paris."


def _steps(out: Path) -> list[dict[str, Any]]:
    (trace,) = pl.read_parquet(out).to_dicts()
    return trace["steps"]


def _trace(out: Path) -> dict[str, Any]:
    (trace,) = pl.read_parquet(out).to_dicts()
    return trace


def _kinds(steps: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(s["type"], (s["tool"] or {}).get("name")) for s in steps]


def _score(out: Path, db: Path) -> dict[str, Any]:
    score_traces([str(out)], db=str(db), no_embedder=True)
    with DuckDBStore(str(db), read_only=True) as store:
        (row,) = store.sql("SELECT * FROM latest_scores JOIN traces USING (trace_id)").to_dicts()
    return row


@pytest.mark.parametrize(
    ("proto", "version"),
    [(False, None), (True, None), (False, 2)],
    # version 2: the names pydantic-ai wrote before 1.0 (a tool's arguments and result in
    # `tool_arguments` and `tool_response`, which were read as nothing)
    ids=["otlp-json", "otlp-protobuf", "otlp-json-pydantic-ai-v2"],
)
def test_pydantic_ai_run_with_a_retried_tool_imports_step_by_step(
    tmp_path: Path, proto: bool, version: Literal[2] | None
) -> None:
    exporter = CollectorFileExporter(tmp_path / ("spans.pb" if proto else "spans.jsonl"), proto)
    agent = weather_agent(tracer_provider(exporter), fail_first_convert=True, version=version)
    assert agent.run_sync(QUESTION).output == ANSWER

    summary = import_otel([str(tmp_path)], str(tmp_path / "traces.parquet"))

    assert (summary.imported, summary.succeeded, summary.unknown) == (1, 0, 1)
    assert summary.rejected == {}
    assert "| imported, failure | 0 |" in summary.markdown
    assert summary.spans_read == len(exporter.spans) == 8 and summary.balanced
    assert summary.spans == {
        "mapped": 5,
        "agent_span": 1,
        "not_agent_work": 0,
        "no_text_output": 2,
        "echoed_model_call": 0,
        "duplicate_span": 0,
        "invalid_span": 0,
        "outside_agent": 0,
        "rejected_trace": 0,
    }
    trace = _trace(tmp_path / "traces.parquet")
    steps = trace["steps"]
    assert _kinds(steps) == [
        ("thought", None),
        ("tool_call", "get_weather"),
        ("tool_call", "convert"),
        ("error_recovery", "convert"),
        ("thought", None),
    ]
    assert [s["step_id"] for s in steps] == [0, 1, 2, 3, 4]
    assert steps[0]["content"] == "Let me look up the weather."
    assert json.loads(steps[1]["input"]) == {"city": "Paris"}
    assert steps[1]["output_summary"] == "21 C, sunny"
    assert json.loads(steps[2]["input"]) == {"celsius": "abc"}
    assert json.loads(steps[2]["output_summary"]) == {"error": "celsius must be a number"}
    assert json.loads(steps[3]["input"]) == {"celsius": "21"}
    assert steps[3]["output_summary"] == "69.8"
    assert steps[4]["content"] == ANSWER
    assert all(s["latency_ms"] is not None and s["latency_ms"] >= 0 for s in steps)
    assert trace["task"]["objective"] == QUESTION
    assert trace["outcome"] == {"result_summary": ANSWER, "confidence": 1.0}
    root = next(span for span in exporter.spans if span.parent is None)
    assert trace["metadata"]["agent_id"] == "weather_agent"
    # the root span's status is UNSET: the run recorded no outcome (SPEC 1)
    assert (trace["metadata"]["success"], trace["metadata"]["outcome_unknown"]) == (None, True)
    created = trace["metadata"]["created_at"]  # the root's start, in whole microseconds
    epoch = datetime(1970, 1, 1, tzinfo=created.tzinfo)
    assert created == epoch + timedelta(microseconds=root.start_time // 1000)

    scored = _score(tmp_path / "traces.parquet", tmp_path / "scores.duckdb")
    assert (scored["n_steps"], scored["error_recovery"], scored["unique_tools"]) == (5, 1, 2)
    assert scored["success"] is None


def test_a_retried_tool_failure_adds_error_recovery_and_lowers_nothing_else(tmp_path: Path) -> None:
    rows = {}
    for fails in (False, True):
        folder = tmp_path / ("fails" if fails else "clean")
        folder.mkdir()
        exporter = CollectorFileExporter(folder / "spans.jsonl")
        assert (
            weather_agent(tracer_provider(exporter), fail_first_convert=fails)
            .run_sync(QUESTION)
            .output
            == ANSWER
        )
        import_otel([str(folder)], str(folder / "traces.parquet"))
        rows[fails] = (
            _trace(folder / "traces.parquet"),
            _score(folder / "traces.parquet", folder / "s.duckdb"),
        )
    (clean, clean_score), (failed, failed_score) = rows[False], rows[True]
    assert _kinds(failed["steps"]) == [
        ("thought", None),
        ("tool_call", "get_weather"),
        ("tool_call", "convert"),
        ("error_recovery", "convert"),
        ("thought", None),
    ]
    assert _kinds(clean["steps"]) == [
        ("thought", None),
        ("tool_call", "get_weather"),
        ("tool_call", "convert"),
        ("thought", None),
    ]
    assert failed["metadata"]["success"] is clean["metadata"]["success"] is None
    assert failed["task"] == clean["task"] and failed["outcome"] == clean["outcome"]
    # no recorded outcome reads as the SDK reads a falsy success: confidence * 0.3
    assert failed_score["outcome_confidence"] == clean_score["outcome_confidence"] == 0.3
    assert failed_score["tool_diversity"] == clean_score["tool_diversity"]
    assert failed_score["unique_tools"] == clean_score["unique_tools"] == 2
    assert (clean_score["error_recovery"], failed_score["error_recovery"]) == (0, 1)
    assert failed_score["complexity"] > clean_score["complexity"]
    assert failed_score["score"] > clean_score["score"]
    assert failed_score["overrides"] == clean_score["overrides"]


@pytest.fixture
def openai_server() -> Iterator[Any]:
    """The judge tests' fake OpenAI-compatible server: a 400 first, then a tool call, then an answer."""
    from judge_helpers import Reply, chat_reply, error_reply, serve

    def script(number: int) -> Reply:
        if number == 1:
            return error_reply(400)
        if number == 2:
            call = {
                "id": "call_1",
                "type": "function",
                "function": {"name": "search", "arguments": '{"q": "capital of France"}'},
            }
            message = {"role": "assistant", "content": "I will search.", "tool_calls": [call]}
            return chat_reply(message, "tool_calls", (20, 10), model="gpt-fake")
        answer = {"role": "assistant", "content": "Paris is the capital of France."}
        return chat_reply(answer, "stop", (20, 10), model="gpt-fake")

    with serve(script) as server:
        yield server


def test_openai_client_under_openinference_imports_step_by_step(
    tmp_path: Path, openai_server: Any
) -> None:
    import openai
    from openinference.instrumentation import OITracer, TraceConfig, using_tags
    from openinference.instrumentation.openai import OpenAIInstrumentor

    exporter = CollectorFileExporter(tmp_path / "spans.jsonl")
    provider = tracer_provider(exporter, service="capital-service")
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        client = openai.OpenAI(base_url=openai_server.url, api_key="sk-fake", max_retries=0)
        tracer = OITracer(provider.get_tracer("capital-agent"), config=TraceConfig())
        question = "What is the capital of France?"
        messages = [{"role": "user", "content": question}]
        with (
            using_tags(["geography", "canary"]),
            tracer.start_as_current_span("capital agent", openinference_span_kind="agent") as root,
        ):
            root.set_input(question)
            with pytest.raises(openai.BadRequestError):
                client.chat.completions.create(model="gpt-fake", messages=messages)  # type: ignore[arg-type]
            client.chat.completions.create(model="gpt-fake", messages=messages)  # type: ignore[arg-type]
            with tracer.start_as_current_span("search", openinference_span_kind="tool") as tool:
                tool.set_tool(
                    name="search", description="web search", parameters={"q": "capital of France"}
                )
                tool.set_input({"q": "capital of France"})
                tool.set_output("Paris is the capital and largest city of France.")
            answer = client.chat.completions.create(model="gpt-fake", messages=messages)  # type: ignore[arg-type]
            root.set_output(answer.choices[0].message.content)
            root.set_status("OK")
    finally:
        instrumentor.uninstrument()

    summary = import_otel([str(tmp_path)], str(tmp_path / "traces.parquet"))

    assert (summary.imported, summary.rejected, summary.spans_read) == (1, {}, 5)
    assert summary.spans["mapped"] == 4 and summary.spans["agent_span"] == 1
    trace = _trace(tmp_path / "traces.parquet")
    steps = trace["steps"]
    assert _kinds(steps) == [
        ("thought", None),
        ("error_recovery", None),
        ("tool_call", "search"),
        ("thought", None),
    ]
    assert steps[0]["content"] is None and "400" in steps[0]["output_summary"]
    assert steps[1]["content"] == "I will search."
    assert json.loads(steps[2]["input"]) == {"q": "capital of France"}
    assert steps[2]["output_summary"] == "Paris is the capital and largest city of France."
    assert steps[3]["content"] == "Paris is the capital of France."
    assert trace["task"]["objective"] == question
    assert trace["outcome"]["result_summary"] == "Paris is the capital of France."
    assert trace["metadata"]["success"] is None
    assert trace["metadata"]["agent_id"] == "capital-service"
    assert trace["metadata"]["tags"] == ["geography", "canary"]  # OpenInference's tag.tags

    scored = _score(tmp_path / "traces.parquet", tmp_path / "scores.duckdb")
    assert (scored["n_steps"], scored["error_recovery"], scored["unique_tools"]) == (4, 1, 1)


class _City(BaseModel):
    city: str
    country: str


@pytest.mark.parametrize("version", [None, 2], ids=["default", "pydantic-ai-v2"])
def test_a_structured_output_is_the_run_s_answer_and_its_step(
    tmp_path: Path, version: Literal[2] | None
) -> None:
    """A pydantic-ai agent with an output type and no tool: its one model call only calls the
    output tool (`final_result`), which no span records. Before, the run was quarantined
    `empty_trajectory` (a model call that only asks for tools is no step: its tools' spans
    are); the call the model was offered as an output tool is its answer."""
    exporter = CollectorFileExporter(tmp_path / "spans.jsonl", False)
    provider = tracer_provider(exporter)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        output = {"city": "Paris", "country": "France"}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, output)])

    agent = Agent(
        FunctionModel(model),
        name="geo",
        output_type=_City,
        capabilities=[instrumentation(provider, version)],
    )
    assert agent.run_sync("Which city is the Eiffel tower in?").output == _City(
        city="Paris", country="France"
    )

    summary = import_otel([str(tmp_path)], str(tmp_path / "traces.parquet"))

    assert (summary.imported, summary.rejected) == (1, {})
    trace = _trace(tmp_path / "traces.parquet")
    answer = '{"city":"Paris","country":"France"}'
    assert trace["task"]["objective"] == "Which city is the Eiffel tower in?"
    assert trace["outcome"]["result_summary"] == answer
    assert [(s["type"], s["content"]) for s in trace["steps"]] == [("thought", answer)]
    assert trace["metadata"]["agent_id"] == "geo"
