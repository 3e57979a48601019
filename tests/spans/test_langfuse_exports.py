"""Langfuse traces as Langfuse hands them out (tests/data/SOURCES.md: six framework runs that
Langfuse's own repository downloaded whole from Langfuse Cloud) score with no flag: each file
is one trace with the user's task as objective, the run's answer, and the tool calls in the
order they ran. Before, no importer took them: read as OTel they were hundreds of malformed
lines. The same traces one per line, and in the public API's shape (the trace's fields with
its full observations), score the same; a Langfuse list page, whose observations are only ids,
is refused with what it holds."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "langfuse"

# file -> objective, the answer's start, tool calls (name, arguments) in order, agent
EXPECTED: dict[str, tuple[str, str, list[tuple[str, object]], str | None]] = {
    "openai-agents-2025-09-30": (
        "What's the weather in Tokyo?",
        "The weather in Tokyo is currently sunny.",
        [("get_weather", {"city": "Tokyo"})],
        "Hello world",  # OpenInference names the agent only in its AGENT span's name
    ),
    "pydantic-ai-tools-2025-12-04": (
        "Select and call THREE of the available tools to get joke suggestions about 'programming'.",
        "Why do programmers hate nature?  \nIt has too many bugs!",
        [
            ("get_pun_suggestion", {"topic": "programming"}),
            ("get_dad_joke_suggestion", {"topic": "programming"}),
            ("get_one_liner_suggestion", {"topic": "programming"}),
        ],
        "joke_agent",
    ),
    "microsoft-agent-2025-12-17": (
        "What's the weather in Tokyo?",
        "Current conditions in Tokyo, Japan: stormy, high around 23°C.",
        [("get_weather", {"location": "Tokyo, Japan"})],
        "171105b7-59dd-49c0-9677-0b95395aa46a",
    ),
    "langgraph-python-2025-08-22": (
        "Search the web for 'example' and summarize.",  # not the "Be helpful!" prompt before it
        'The search for "example" primarily leads to the website [example.com]',
        [("Web-Search", "{'query': 'example'}")],  # a plain span named after the called tool
        None,
    ),
    "claude-agent-2025-12-22": (
        "What's the weather like in Berlin and New York?",
        "Great! Here's the current weather for both cities:",
        [
            ("mcp__weather__get_weather", {"input": {"city": "Berlin"}}),
            ("mcp__weather__get_weather", {"input": {"city": "New York"}}),
        ],
        None,
    ),
    "google-adk-2025-08-28": (
        "hi",  # the text of ADK's new_message (the run's input is the whole request)
        "Hello Langfuse 👋!\n",  # the text of the run's last event, not the event's JSON
        [("say_hello", {})],
        "agent_run [hello_agent]",  # OpenInference's ADK span: the agent's name in its own
    ),
    "vercel-ai-sdk-2025-09-18": (
        "what is a dataset",
        "# What is a dataset in Langfuse?",  # the app's root observation's output: its answer
        [  # the AI SDK's ai.toolCall span: the tool named in ai.toolCall.name, not the span's
            (
                "searchLangfuseDocs",
                {
                    "query": "What is a dataset in Langfuse? definition, use cases, evaluation, "
                    "prompt testing, datasets feature docs"
                },
            )
        ],
        None,  # unknown_service:node
    ),
    "csharp-agent-with-gemini-2026-03-09": (
        "What are my month over month performance insights the past quarter, by cost, "
        "displays, clicks, CTR, sales, CVR? Please split by campaign taxonomy",
        "I couldn't retrieve the month-over-month performance insights for the past quarter",
        [("get_custom_report", None), ("final_result", None)],
        "agentic-clientinsights",  # the service that ran it; the root's parent is not in the file
    ),
    "beeai-2025-08-01": (
        "I'm planning a trip to Barcelona, Spain. Can you research key attractions and "
        "landmarks I should visit, and also tell me what the current weather conditions are "
        "like there?",
        # the run's message, which the instrumentation wrote as Python's repr of it
        "Barcelona is a vibrant city known for its rich cultural heritage",
        # one call each, from the ReAct agent's updates: not the Wikipedia tool's three event
        # spans, and OpenMeteoTool, which has no span of its own
        [
            ("Wikipedia", {"query": "Tourism in Barcelona"}),
            ("OpenMeteoTool", {"location_name": "Barcelona", "country": "Spain"}),
        ],
        "beeai-framework-main",  # the instrumentation's AGENT span: no agent is named
    ),
    "koog-2025-08-26": (
        "Greet and say goodbye to the user in the same message. Use provided tools to generate "
        "a proper greeting. The user name is Bob.",
        "Hello my darling Bob! And, bye my dear Bob!",
        # Both tools started in the same millisecond (Langfuse keeps milliseconds): the file
        # does not say which ran first, and they are ordered by span id. The model asked for
        # HelloTool first (docs/import.md, "What is lost").
        [("ByeTool", {"name": "Bob"}), ("HelloTool", {"name": "Bob"})],
        "ai.koog",  # no agent name: the service that ran it
    ),
}

NAME = "regexp_extract(source_file, '([^/]+)\\.trace\\.json', 1)"
"""A download's name (its file's, without .trace.json) in SQL over `traces`."""

TRACE_SQL = (
    f"SELECT {NAME}, objective, "
    "result_summary, agent_id, success, "
    "list_transform(list_filter(steps, s -> s.type = 'tool_call'), s -> [s.tool_name, s.input]), "
    "len(list_filter(steps, s -> s.type = 'tool_call' AND s.output_summary LIKE '{\"error\"%')) "
    "FROM traces ORDER BY 1"
)


def _arguments(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _check(rows: list[tuple[object, ...]], names: list[str]) -> None:
    assert [row[0] for row in rows] == sorted(names)
    for name, objective, answer, agent, success, calls, failed in rows:
        expected_objective, answer_start, tools, expected_agent = EXPECTED[str(name)]
        assert objective == expected_objective, name
        assert str(answer).startswith(answer_start), (name, answer)
        assert [tool for tool, _ in calls] == [tool for tool, _ in tools], name  # type: ignore[union-attr]
        for (_, arguments), (_, wanted) in zip(calls, tools, strict=True):  # type: ignore[arg-type]
            if wanted is not None:
                assert _arguments(arguments) == wanted, name
        assert agent == expected_agent, name
        assert success is None  # Langfuse records no outcome: unknown, not a failure
        assert failed == 0  # every observation's level is DEFAULT


def test_each_langfuse_download_is_one_trace_as_written(tmp_path: Path) -> None:
    folder = tmp_path / "exports"
    shutil.copytree(DATA, folder)
    db = tmp_path / "lf.duckdb"
    assert main(["score", str(folder), "--db", str(db), "--no-embedder"]) == 0
    statuses = query_rows(db, "SELECT status, rows_read, rows_scored FROM files")
    assert statuses == [("loaded", 1, 1)] * len(EXPECTED)
    _check(query_rows(db, TRACE_SQL), list(EXPECTED))


def test_one_trace_a_line_and_the_public_api_shape_read_the_same(tmp_path: Path) -> None:
    """The public API's `GET /api/public/traces/{id}` is the trace's own fields with its full
    observations; written one a line (`.jsonl`) they are the same traces."""
    lines = []
    for name in ("openai-agents-2025-09-30", "langgraph-python-2025-08-22"):
        download = json.loads((DATA / f"{name}.trace.json").read_text())
        trace = {key: value for key, value in download["trace"].items() if key != "observations"}
        lines.append(json.dumps({**trace, "observations": download["observations"]}))
    export = tmp_path / "traces.jsonl"
    export.write_text("\n".join(lines) + "\n")
    db = tmp_path / "api.duckdb"
    assert main(["score", str(export), "--db", str(db), "--no-embedder"]) == 0
    rows = query_rows(db, TRACE_SQL.replace("\\.trace\\.json", "\\.jsonl"))
    assert len(rows) == 2
    by_objective = {row[1]: row for row in rows}
    for name in ("openai-agents-2025-09-30", "langgraph-python-2025-08-22"):
        objective, answer_start, tools, _ = EXPECTED[name]
        row = by_objective[objective]
        assert str(row[2]).startswith(answer_start)
        assert [call[0] for call in row[5]] == [tool for tool, _ in tools]


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (
            {"data": [{"id": "t", "timestamp": "2025-01-01T00:00:00Z", "observations": ["o"]}]},
            "no format recognises the file: it holds a JSON object with keys data",
        ),
        (
            {"trace": {"id": "t1"}, "observations": []},
            "holds a JSON object with keys trace, observations, not OTLP spans",
        ),
    ],
    ids=["list-page", "no-observations"],
)
def test_langfuse_files_without_observations_are_refused_with_what_they_hold(
    tmp_path: Path, content: object, said: str
) -> None:
    export = tmp_path / "page.json"
    export.write_text(json.dumps(content, indent=2))
    db = tmp_path / "p.duckdb"
    assert main(["score", str(export), "--db", str(db), "--no-embedder"]) == 1
    assert query_rows(db, "SELECT count(*) FROM traces") == [(0,)]
    ((status, reason),) = query_rows(db, "SELECT status, reason FROM files")
    assert status == "quarantined" and said in reason, reason


def _blob_row(observation: dict[str, Any]) -> dict[str, Any]:
    """An observation as the blob storage export writes its row (langfuse@62751446
    worker/src/features/blobstorage/handleBlobStorageIntegrationProjectJob.ts, the fields of
    packages/shared/src/domain/observation-field-groups.ts): ClickHouse's snake_case names,
    times as `2025-09-30 12:00:00.123` in UTC, input and output as text, metadata a map of
    text values."""

    def text(value: Any) -> str | None:
        return value if value is None or isinstance(value, str) else json.dumps(value)

    def when(value: str | None) -> str | None:
        return None if value is None else value.replace("T", " ").removesuffix("Z")[:23]

    metadata = observation.get("metadata")
    if isinstance(metadata, str):
        metadata = json.loads(metadata) if metadata.startswith("{") else {"value": metadata}
    return {
        "id": observation["id"],
        "trace_id": observation.get("traceId"),
        "project_id": "a-project",
        "environment": "default",
        "type": observation["type"],
        "parent_observation_id": observation.get("parentObservationId"),
        "start_time": when(observation.get("startTime")),
        "end_time": when(observation.get("endTime")),
        "name": observation.get("name"),
        "metadata": {key: text(value) for key, value in (metadata or {}).items()},
        "level": observation.get("level"),
        "status_message": observation.get("statusMessage"),
        "version": observation.get("version"),
        "input": text(observation.get("input")),
        "output": text(observation.get("output")),
    }


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".parquet", ".map.parquet"])
def test_the_blob_export_s_observation_rows_read_as_the_download_does(
    tmp_path: Path, suffix: str
) -> None:
    """The blob storage export's observations table (JSON lines, gzip-compressed as the
    scheduled export writes them by default under `<project>/observations/<time>.jsonl.gz`,
    Parquet with the metadata as a struct or as a map), written here from
    the downloads' own observations (no real export file is public), one table for all six
    traces in shuffled order: each trace comes together again with the download's objective,
    answer, tool calls and agent. LangGraph's callback-handler trace is the exception: its
    tool is a plain span named after the tool a model call asked for, and its run an untyped
    observation, which only the whole trace tells (the download keeps them together)."""
    rows = [
        _blob_row(observation)
        for path in sorted(DATA.glob("*.trace.json"))
        for observation in json.loads(path.read_text())["observations"]
    ]
    rows = rows[1::2] + rows[::2]  # a table is in no trace's order
    export = tmp_path / f"observations{suffix}"
    if suffix == ".jsonl":
        export.write_text("".join(json.dumps(row) + "\n" for row in rows))
    elif suffix == ".jsonl.gz":
        export = tmp_path / "a-project" / "observations" / f"2026-12-07T00-00-00{suffix}"
        export.parent.mkdir(parents=True)
        export.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist(rows)
        if suffix == ".map.parquet":  # ClickHouse's Map(String, String), as a Parquet map
            pairs = [list((row["metadata"] or {}).items()) for row in rows]
            metadata = pa.array(pairs, type=pa.map_(pa.string(), pa.string()))
            table = table.set_column(table.schema.get_field_index("metadata"), "metadata", metadata)
        pq.write_table(table, export)
    db = tmp_path / "blob.duckdb"
    assert main(["score", str(export), "--db", str(db), "--no-embedder"]) == 0
    found = query_rows(
        db,
        "SELECT objective, result_summary, agent_id, "
        "list_transform(list_filter(steps, s -> s.type = 'tool_call'), s -> s.tool_name) "
        "FROM traces",
    )
    assert len(found) == len(EXPECTED)
    by_task = {(row[0], row[2]): row for row in found}  # two ask for Tokyo's weather
    for name, (objective, answer_start, tools, agent) in EXPECTED.items():
        if name == "langgraph-python-2025-08-22":
            continue
        _, answer, _, calls = by_task[objective, agent]
        assert str(answer).startswith(answer_start), name
        assert calls == [tool for tool, _ in tools], name


def test_the_agent_version_is_the_resource_s_else_the_trace_s_version_else_its_release(
    tmp_path: Path,
) -> None:
    """The C# agent's OTel resource says service.version 105537 (so does its trace's version),
    Koog's says 0.3.0 (Koog's own version, its service being ai.koog); the other downloads say
    none. A trace's own `version`, else its `release`, tags the traces whose spans say none,
    whole-document JSON and one trace a line alike."""
    db = tmp_path / "lf.duckdb"
    folder = tmp_path / "exports"
    shutil.copytree(DATA, folder)
    assert main(["score", str(folder), "--db", str(db), "--no-embedder"]) == 0
    versions = dict(query_rows(db, f"SELECT {NAME}, agent_version FROM traces"))
    said = {"csharp-agent-with-gemini-2026-03-09": "105537", "koog-2025-08-26": "0.3.0"}
    assert versions == {name: said.get(name) for name in EXPECTED}

    download = json.loads((DATA / "openai-agents-2025-09-30.trace.json").read_text())
    trace = {key: value for key, value in download["trace"].items() if key != "observations"}
    tags = [("v2", "r1"), (None, "2025.09.30"), ("", "r3"), (3, None), (None, None)]
    records = [
        {**trace, "id": f"t{i}", "version": version, "release": release,
         "observations": [{**o, "traceId": f"t{i}"} for o in download["observations"]]}
        for i, (version, release) in enumerate(tags)
    ]  # fmt: skip
    expected = {"t0": "v2", "t1": "2025.09.30", "t2": "r3", "t3": "3", "t4": None}
    lines, whole = tmp_path / "api.jsonl", tmp_path / "api.json"
    lines.write_text("".join(json.dumps(record) + "\n" for record in records))
    whole.write_text(json.dumps(records, indent=2))
    for path in (lines, whole):
        tagged = tmp_path / f"{path.suffix[1:]}.duckdb"
        assert main(["score", str(path), "--db", str(tagged), "--no-embedder"]) == 0
        found = query_rows(tagged, "SELECT objective, agent_version FROM traces")
        assert len(found) == len(tags), path
        assert sorted(version or "" for _, version in found) == sorted(
            version or "" for version in expected.values()
        ), path


def test_a_trace_s_tags_are_kept_for_selections(tmp_path: Path) -> None:
    """The pydantic-ai download is tagged `example` and `joke-generator` in Langfuse; the other
    downloads have no tag (an empty list)."""
    db = tmp_path / "lf.duckdb"
    folder = tmp_path / "exports"
    shutil.copytree(DATA, folder)
    assert main(["score", str(folder), "--db", str(db), "--no-embedder"]) == 0
    tags = dict(query_rows(db, f"SELECT {NAME}, tags FROM traces"))
    assert tags == {
        name: ["example", "joke-generator"] if name.startswith("pydantic-ai") else None
        for name in EXPECTED
    }
    ((selected,),) = query_rows(
        db, f"SELECT {NAME} FROM traces WHERE list_contains(tags, 'joke-generator')"
    )
    assert selected == "pydantic-ai-tools-2025-12-04"


def test_a_reply_that_only_asks_for_tools_is_no_thought(tmp_path: Path) -> None:
    """JetBrains Koog writes the tool calls a model asked for as its message's content, the
    calls' JSON (`[{"function": {"name": "HelloTool", ...}, "id": ...}]`): the reply says
    nothing, so it is no thought (before, the first model call's step was that JSON)."""
    export = tmp_path / "koog.trace.json"
    shutil.copyfile(DATA / "koog-2025-08-26.trace.json", export)
    db = tmp_path / "koog.duckdb"
    assert main(["score", str(export), "--db", str(db), "--no-embedder"]) == 0
    kinds = query_rows(
        db, "SELECT list_transform(steps, s -> [s.type, s.content, s.tool_name]) FROM traces"
    )
    assert kinds == [
        (
            [
                ["tool_call", None, "ByeTool"],
                ["tool_call", None, "HelloTool"],
                ["thought", "Hello my darling Bob! And, bye my dear Bob!", None],
            ],
        )
    ]


def _observation(kind: str, name: str, start: int, parent: str | None, **said: Any) -> dict:
    return {
        "id": f"{start:016x}",
        "traceId": "a" * 32,
        "parentObservationId": parent,
        "type": kind,
        "name": name,
        "startTime": f"2026-01-15T10:00:{start:02d}.000Z",
        "endTime": f"2026-01-15T10:00:{start:02d}.500Z",
        "level": "DEFAULT",
        "statusMessage": None,
        "metadata": {"attributes": {}},
        **said,
    }


def _adk_over_a2a(task: str, answer: str) -> dict[str, Any]:
    """A Google ADK router handing a run to another agent over A2A, as Langfuse's public API
    gave such traces in January 2026 (google-adk 1.22.1 through openinference-instrumentation-
    google-adk 0.1.8; ccamacho/xllm `langfuse_traces/*/trace_details.json`, which has no
    licence, so it was read by hand and this is written after it): the model calls' request and
    reply only as the observations' input and output, the google-genai request (`contents`, the
    task first, then ADK's `For context:` parts) and ADK's reply (`model_version`, `content`);
    the run's arguments as the invocation's input; the root a span of the A2A server."""
    context = [{"text": "For context:"}, {"text": "[router] called tool `transfer_to_agent`"}]
    request = {
        "model": "gemini-2.0-flash",
        "config": {"system_instruction": "You route queries to sub-agents."},
        "contents": [{"role": "user", "parts": [{"text": task}, *context]}],
    }
    call = {"function_call": {"name": "transfer_to_agent", "args": {"agent_name": "weather"}}}
    reply = {
        "model_version": "gemini-2.0-flash",
        "content": {"role": "model", "parts": [call]},
        "finish_reason": "STOP",
    }
    run = {"user_id": "u", "new_message": {"role": "user", "parts": [{"text": task}]}}
    event = {"content": {"role": "model", "parts": [{"text": answer}]}, "custom_metadata": {}}
    observations = [
        _observation("SPAN", "a2a.server.JSONRPCHandler.on_message_send", 1, None),
        _observation("CHAIN", "invocation [router]", 2, f"{1:016x}", input=run, output=event),
        _observation("AGENT", "agent_run [router]", 3, f"{2:016x}", input=None, output=event),
        _observation("GENERATION", "call_llm", 4, f"{3:016x}", input=request, output=reply),
        _observation(
            "TOOL",
            "transfer_to_agent",
            5,
            f"{4:016x}",
            input=call["function_call"]["args"],
            output={"result": None},
        ),
    ]
    trace = {"id": "a" * 32, "timestamp": "2026-01-15T10:00:01.000Z", "name": "router"}
    return {**trace, "input": None, "output": None, "observations": observations}


def test_an_adk_run_langfuse_keeps_as_inputs_and_outputs_reads_its_task_and_answer(
    tmp_path: Path,
) -> None:
    task, answer = "What's the weather in Tokyo?", "It is 27 degrees and partly cloudy."
    export = tmp_path / "trace_details.json"
    export.write_text(json.dumps([_adk_over_a2a(task, answer)], indent=2))
    db = tmp_path / "adk.duckdb"
    assert main(["score", str(export), "--db", str(db), "--no-embedder"]) == 0
    ((objective, said, calls),) = query_rows(
        db,
        "SELECT objective, result_summary, "
        "list_transform(list_filter(steps, s -> s.type = 'tool_call'), s -> s.tool_name) "
        "FROM traces",
    )
    # before: the run's arguments as JSON, no answer (no model call answered in text)
    assert (objective, said, calls) == (task, answer, ["transfer_to_agent"])


def test_an_adk_reply_as_a_run_s_output_is_its_text_without_the_thought(tmp_path: Path) -> None:
    # ADK's agent-as-tool run (the same repository): the root invocation's output is the model's
    # reply itself, a part of it marked as thought
    value = _adk_over_a2a("how much is 4*5", "unused")
    reply = {
        "model_version": "gemini-2.0-flash",
        "content": {
            "role": "model",
            "parts": [{"text": "/*REASONING*/ the tool said 20", "thought": True}, {"text": "20"}],
        },
        "finish_reason": "STOP",
    }
    root, *rest = value["observations"][1:]  # no A2A span: the invocation is the root
    value["observations"] = [{**root, "parentObservationId": None, "output": reply}, *rest]
    export = tmp_path / "agent_as_tool.json"
    export.write_text(json.dumps(value))
    db = tmp_path / "adk.duckdb"
    assert main(["score", str(export), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT result_summary FROM traces") == [("20",)]


def test_beeai_s_react_updates_are_its_steps(tmp_path: Path) -> None:
    """BeeAI 0.1.33's first OpenInference instrumentation made a span of every event: each
    iteration's thought is one step, each tool call one, the final answer one; the model's
    streamed tokens (a message each, in a `success` span whose 128 attributes left no room for
    its `target`) are none."""
    source = DATA / "beeai-2025-08-01.trace.json"
    export = tmp_path / source.name
    shutil.copy(source, export)
    db = tmp_path / "bee.duckdb"
    assert main(["score", str(export), "--db", str(db), "--no-embedder"]) == 0
    ((steps,),) = query_rows(
        db,
        "SELECT list_transform(steps, s -> [s.type, coalesce(s.tool_name, s.content)]) FROM traces",
    )
    assert [kind for kind, _ in steps] == ["thought", "tool_call"] * 2 + ["thought"] * 2
    thoughts = [text for kind, text in steps if kind == "thought"]
    assert thoughts[0].startswith("I will first research key attractions and landmarks")
    assert thoughts[2].startswith("I now have the current weather conditions in Barcelona")
    assert thoughts[3].startswith("Barcelona is a vibrant city")  # the final answer's step
