"""The Vercel AI SDK's own spans, as OpenTelemetry JS sends them (OTLP JSON; tests/data/vercel-ai,
written by its capture script), score with no flag: AI SDK 5's `ai.*` names, where the task is
only in `ai.prompt` and `ai.prompt.messages` (content as a list of parts) and a tool's result
is JSON text, and AI SDK 7's GenAI names (@ai-sdk/otel). The expectations are read from each
file here with `json`: per OTel trace, the run's prompt, its answer, the tool calls in time
order with their JSON results decoded, the failed ones (status ERROR), and the agent."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "vercel-ai"
FILES = sorted(DATA.glob("*.jsonl"))

_TRACES = (
    "SELECT objective, result_summary, agent_id, "
    "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
    "  s -> [s.tool_name, s.input, s.output_summary]) "
    "FROM traces ORDER BY objective"
)


def _spans(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The file's spans by trace, each with its attributes as a plain dict, in time order."""
    traces: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in path.read_text().splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    values = {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}
                    traces[span["traceId"]].append({**span, "attrs": values})
    return {t: sorted(s, key=lambda s: int(s["startTimeUnixNano"])) for t, s in traces.items()}


def _expected(spans: list[dict[str, Any]]) -> tuple[Any, ...]:
    run = next(s for s in spans if s.get("parentSpanId") is None)["attrs"]
    if "ai.prompt" in run:  # AI SDK 5
        objective = json.loads(run["ai.prompt"])["prompt"]
        answer, agent = run["ai.response.text"], "weather-app"  # the resource's service.name
        tools = [s for s in spans if s["attrs"].get("ai.operationId") == "ai.toolCall"]
        keys = ("ai.toolCall.name", "ai.toolCall.args", "ai.toolCall.result")
    else:  # AI SDK 7: GenAI names
        (asked,) = json.loads(run["gen_ai.input.messages"])
        objective = asked["parts"][0]["content"]
        (said,) = json.loads(run["gen_ai.output.messages"])
        texts = [part["content"] for part in said["parts"] if part["type"] == "text"]
        answer, agent = "\n".join(texts), run["gen_ai.agent.name"]
        tools = [s for s in spans if s["attrs"].get("gen_ai.operation.name") == "execute_tool"]
        keys = ("gen_ai.tool.name", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")
    calls = []
    for tool in tools:
        name, arguments, result = (tool["attrs"].get(key) for key in keys)
        if tool["status"].get("code") == 2:  # ERROR: the error is the span's message
            result = json.dumps({"error": tool["status"]["message"]}, separators=(",", ":"))
        else:
            decoded = json.loads(result)
            result = decoded if isinstance(decoded, str) else result
        calls.append([name, arguments, result])
    return objective, answer, agent, calls


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_the_ai_sdk_s_spans_are_its_runs(path: Path, tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT status FROM files") == [("loaded",)]
    expected = sorted(_expected(spans) for spans in _spans(path).values())
    assert len(expected) == 2
    assert query_rows(db, _TRACES) == expected
    # the second run's first convert call failed and was called again
    failed = query_rows(
        db,
        "SELECT list_transform(steps, s -> s.type) FROM traces WHERE objective LIKE '%Oslo%'",
    )
    assert failed == [(["tool_call", "tool_call", "error_recovery", "thought"],)]


def test_the_model_calls_messages_give_the_task_where_the_run_has_no_prompt(
    tmp_path: Path,
) -> None:
    """With the run's `ai.prompt` gone, the first model call's `ai.prompt.messages` (the user
    message's content a list of text parts) is the task: it was read as no text."""
    lines = []
    for line in (DATA / "ai-5.0.277.jsonl").read_text().splitlines():
        request = json.loads(line)
        for resource in request["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    kept = [a for a in span["attributes"] if a["key"] != "ai.prompt"]
                    span["attributes"] = kept
        lines.append(json.dumps(request))
    path = tmp_path / "no-run-prompt.jsonl"
    path.write_text("\n".join(lines) + "\n")
    db = tmp_path / "t.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT objective FROM traces ORDER BY objective") == [
        ("What is the weather in Oslo, in Fahrenheit?",),
        ("What is the weather in Paris, in Fahrenheit?",),
    ]
