"""Langfuse downloads of framework runs that Langfuse's own repository keeps
(langfuse/langfuse@62751446, `worker/src/__tests__/chatml/framework-traces/`, MIT) and that
were scored wrong: AutoGen's and LlamaIndex's single model calls were rejected
`empty_trajectory` (a reply given only as plain text was not read), pydantic-ai 0.2's run as
well (its messages are in one `events` attribute), a CrewAI crew under the app's own span
answered with the model's ReAct text ("I now can give a great answer\\nFinal Answer: ...")
instead of the crew's output, and a Vercel AI SDK run that ended on a tool call answered with
the JSON of that call.

Those files carry their project's Langfuse public key (`pk-lf-...`, in each observation's
`metadata.scope`), so they are not copied into tests/data: each trace is written here with the
fields the reader takes from it, as the file has them (ids, types, names, times, the input and
output texts, the OTel attributes), the key and the rest left out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import query_rows

from tracegrade.cli import main

TRACE_SQL = (
    "SELECT objective, result_summary, agent_id, "
    "list_transform(steps, s -> [s.type, coalesce(s.tool_name, '')]) FROM traces"
)


def _observation(
    id_: str, parent: str | None, kind: str, name: str, start: str, **fields: Any
) -> dict[str, Any]:
    attributes = fields.pop("attributes", None)
    return {
        "id": id_,
        "parentObservationId": parent,
        "type": kind,
        "name": name,
        "startTime": start,
        "endTime": start,
        "level": "DEFAULT",
        "statusMessage": None,
        "input": fields.get("input"),
        "output": fields.get("output"),
        "model": fields.get("model"),
        "metadata": json.dumps({"attributes": attributes or {}}),
    }


def _score(tmp_path: Path, trace: dict[str, Any], observations: list[dict[str, Any]]) -> Any:
    """The one trace `tracegrade score FILE --db DB` makes of a download, with no flag."""
    for item in observations:
        item["traceId"] = trace["id"]
    export = tmp_path / f"{trace['name']}.trace.json"
    export.write_text(json.dumps({"trace": trace, "observations": observations}, indent=2))
    db = tmp_path / "lf.duckdb"
    assert main(["score", str(export), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT status, rows_scored FROM files") == [("loaded", 1)]
    (row,) = query_rows(db, TRACE_SQL)
    return row


def _trace(id_: str, name: str, given: Any, got: Any) -> dict[str, Any]:
    """A download's trace: its input and output JSON-encoded, as Langfuse hands them out."""
    return {
        "id": id_,
        "name": name,
        "timestamp": "2025-06-06T11:31:33.965Z",
        "version": "1.0.0",
        "input": None if given is None else json.dumps(given),
        "output": None if got is None else json.dumps(got),
    }


def test_autogen_s_one_model_call_recorded_by_the_sdk_is_its_step(tmp_path: Path) -> None:
    """autogen-2025-06-06: the app's span, and in it the generation AutoGen's run made, its
    input and output plain text and no OTel attribute (Langfuse's SDK recorded it by hand)."""
    trace = _trace(
        "1b72c51fabed12ae7df83bfd4a09f545",
        "autogen-chat-trace",
        "Say 'Hello World!'",
        "Hello World!",
    )
    observations = [
        _observation(
            "95f4f51edeb603d9", None, "SPAN", "autogen-chat-trace", "2025-06-06T11:31:33.965Z"
        ),
        _observation(
            "83517f9062f5ada4",
            "95f4f51edeb603d9",
            "GENERATION",
            "chat gpt-4o",
            "2025-06-06T11:31:33.978Z",
            input="system: You are a helpful AI assistant. Solve tasks using your tools. Reply "
            "with TERMINATE when the task has been completed.\nuser: Say 'Hello World!'",
            output="Hello World!",
            model="gpt-4o",
        ),
    ]
    objective, answer, _, steps = _score(tmp_path, trace, observations)
    assert objective == "Say 'Hello World!'"  # the trace's input, not the prompt around it
    assert answer == "Hello World!"
    assert steps == [["thought", ""]]


def test_a_llama_index_completion_s_plain_text_reply_is_its_step(tmp_path: Path) -> None:
    """llamaindex-2025-06-05: OpenInference's LlamaIndex `complete` span, whose reply is only
    its `output.value` (a completion has no output messages)."""
    reply = "Langfuse is a tool designed to help developers monitor and debug applications."
    trace = _trace(
        "12ea412956f99347b0503c1144acd0ec", "llama-index-trace", "What is Langfuse?", reply
    )
    observations = [
        _observation(
            "49b9a2a8ff3b57b2", None, "SPAN", "llama-index-trace", "2025-06-05T09:00:00.000Z"
        ),
        _observation(
            "c1ef2e2f5c0fc1a9",
            "49b9a2a8ff3b57b2",
            "GENERATION",
            "OpenAI.complete",
            "2025-06-05T09:00:00.100Z",
            input=json.dumps({"args": ["What is Langfuse?"]}),
            output=reply,
            model="gpt-4o",
            attributes={
                "llm.model_name": "gpt-4o",
                "input.value": json.dumps({"args": ["What is Langfuse?"]}),
                "input.mime_type": "application/json",
                "llm.prompts": '["What is Langfuse?"]',
                "output.value": reply,
                "openinference.span.kind": "LLM",
            },
        ),
    ]
    objective, answer, _, steps = _score(tmp_path, trace, observations)
    assert (objective, answer, steps) == ("What is Langfuse?", reply, [["thought", ""]])


_PYDANTIC_AI_EVENTS = [
    {
        "content": "You are a helpful assistant that answers questions clearly and concisely.",
        "role": "system",
        "gen_ai.system": "openai",
        "gen_ai.message.index": 0,
        "event.name": "gen_ai.system.message",
    },
    {
        "content": "What is Langfuse?",
        "role": "user",
        "gen_ai.system": "openai",
        "gen_ai.message.index": 0,
        "event.name": "gen_ai.user.message",
    },
    {
        "index": 0,
        "message": {"role": "assistant", "content": "Langfuse is a tool for observability."},
        "gen_ai.system": "openai",
        "event.name": "gen_ai.choice",
    },
]
"""A pydantic-ai 0.2.15 model call's `events` attribute (its default instrumentation then)."""


def test_pydantic_ai_0_2_s_events_attribute_holds_its_messages(tmp_path: Path) -> None:
    """pydantic-ai-2025-06-06: pydantic-ai 0.2.15 under the app's span; the model call's
    messages only in its `events` attribute, the run's agent in `agent_name`."""
    answer = "Langfuse is a tool for observability."
    trace = _trace(
        "25f4bdeebaab60e6e1bee7e8469554bc", "pydantic-ai-qa-trace", "What is Langfuse?", answer
    )
    observations = [
        _observation(
            "5cb389a3bdd21a6e",
            "0a4fac2553f22f2e",
            "GENERATION",
            "chat gpt-4o",
            "2025-06-06T14:40:28.600Z",
            # Langfuse shows the events as the input, and the choice as the output
            input=_PYDANTIC_AI_EVENTS[:2],
            output={key: _PYDANTIC_AI_EVENTS[2][key] for key in ("index", "message")},
            model="gpt-4o",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.system": "openai",
                "gen_ai.request.model": "gpt-4o",
                "events": json.dumps(_PYDANTIC_AI_EVENTS),
            },
        ),
        _observation(
            "0a4fac2553f22f2e",
            "538fed87d11686d3",
            "SPAN",
            "qa_agent run",
            "2025-06-06T14:40:28.580Z",
            attributes={
                "model_name": "gpt-4o",
                "agent_name": "qa_agent",
                "logfire.msg": "qa_agent run",
                "final_result": answer,
            },
        ),
        _observation(
            "538fed87d11686d3", None, "SPAN", "pydantic-ai-qa-trace", "2025-06-06T14:40:28.562Z"
        ),
    ]
    assert _score(tmp_path, trace, observations) == (
        "What is Langfuse?",
        answer,
        "qa_agent",
        [["thought", ""]],
    )


_STRUCTURED = {"answer": "Langfuse is a tool for observability.", "sure": True}
"""The output of the same agent given an output type: the model calls pydantic-ai's output
tool with it, and the run records it as its `final_result`."""


@pytest.mark.parametrize("structured", [False, True], ids=["text", "output-type"])
def test_pydantic_ai_0_2_s_events_attribute_read_from_otlp_spans_alone(
    tmp_path: Path, structured: bool
) -> None:
    """The same run exported as OTLP JSON (no Langfuse): the model call's messages are only in
    its `events` attribute; the objective and the answer come from them. With an output type,
    the model's reply only calls the output tool it was offered (`model_request_parameters`):
    that call is its step, and the run's `final_result` (its span names no operation, only
    its `agent_name`) the answer."""
    events = _PYDANTIC_AI_EVENTS
    run = {"agent_name": "qa_agent", "model_name": "gpt-4o"}
    offered = {"function_tools": [], "allow_text_output": True, "output_tools": []}
    if structured:
        call = {"name": "final_result", "arguments": json.dumps(_STRUCTURED)}
        reply = {
            "role": "assistant",
            "tool_calls": [{"id": "c1", "type": "function", "function": call}],
        }
        events = [*events[:2], {"index": 0, "message": reply, "event.name": "gen_ai.choice"}]
        run["final_result"] = json.dumps(_STRUCTURED)
        offered = {
            **offered,
            "allow_text_output": False,
            "output_tools": [{"name": "final_result"}],
        }

    def span(span_id: str, parent: str, name: str, start: int, attributes: dict[str, str]) -> Any:
        return {
            "traceId": "25f4bdeebaab60e6e1bee7e8469554bc",
            "spanId": span_id,
            "parentSpanId": parent,
            "name": name,
            "kind": 1,
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(start + 1_000_000),
            "attributes": [
                {"key": key, "value": {"stringValue": value}} for key, value in attributes.items()
            ],
            "status": {},
        }

    spans = [
        span(
            "0a4fac2553f22f2e",
            "",
            "qa_agent run",
            1_749_220_828_580_000_000,
            run,
        ),
        span(
            "5cb389a3bdd21a6e",
            "0a4fac2553f22f2e",
            "chat gpt-4o",
            1_749_220_828_600_000_000,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "model_request_parameters": json.dumps(offered),
                "events": json.dumps(events),
            },
        ),
    ]
    request = {
        "resourceSpans": [
            {
                "resource": {"attributes": []},
                "scopeSpans": [
                    {"scope": {"name": "pydantic-ai", "version": "0.2.15"}, "spans": spans}
                ],
            }
        ]
    }
    export = tmp_path / "spans.jsonl"
    export.write_text(json.dumps(request) + "\n")
    db = tmp_path / "otlp.duckdb"
    assert main(["score", str(export), "--db", str(db), "--no-embedder"]) == 0
    answer = json.dumps(_STRUCTURED) if structured else "Langfuse is a tool for observability."
    assert query_rows(db, TRACE_SQL) == [
        ("What is Langfuse?", answer, "qa_agent", [["thought", ""]])
    ]
    if structured:  # the step's text is the output the model gave
        ((text,),) = query_rows(db, "SELECT steps[1].content FROM traces")
        assert json.loads(text) == _STRUCTURED


def test_a_crewai_crew_under_the_app_s_span_answers_with_the_crew_s_output(tmp_path: Path) -> None:
    """crewai-2025-07-11: the app's span (no input or output), the crew's run in it, whose
    output is the crew's answer; the model's reply in the task is CrewAI's ReAct text."""
    html = "```html\n<h1>Hello World! Langfuse monitors your CrewAI agent!</h1>\n```"
    task = (
        "Define the HTML for making a simple website with heading- Hello World! Langfuse "
        "monitors your CrewAI agent!"
    )
    prompt = (
        f"\nCurrent Task: {task}\n\nThis is the expected criteria for your final answer: A "
        "clear and concise HTML code \nyou MUST return the actual complete content as the "
        "final answer, not a summary.\n\nBegin! This is VERY important to you, use the tools "
        "available and give your best Final Answer, your job depends on it!\n\nThought:"
    )
    reply = f"I now can give a great answer  \nFinal Answer: \n{html}"
    trace = _trace("a287bb31e317433610d8827617471140", "crewai-index-trace", None, None)
    observations = [
        _observation(
            "839dad620fa92594", None, "SPAN", "crewai-index-trace", "2025-07-11T10:00:00.000Z"
        ),
        _observation(
            "0dd92fffb354f15b",
            "839dad620fa92594",
            "SPAN",
            "Crew.kickoff",
            "2025-07-11T10:00:00.010Z",
            output=json.dumps({"raw": html, "pydantic": None, "json_dict": None}),
            attributes={
                "output.value": json.dumps({"raw": html, "pydantic": None, "json_dict": None}),
                "output.mime_type": "application/json",
                "openinference.span.kind": "CHAIN",
            },
        ),
        _observation(
            "a8bf77474d6f9a1d",
            "0dd92fffb354f15b",
            "SPAN",
            "Task._execute_core",
            "2025-07-11T10:00:00.020Z",
            attributes={"openinference.span.kind": "AGENT"},
        ),
        _observation(
            "231c43964b7e7e63",
            "a8bf77474d6f9a1d",
            "GENERATION",
            "completion",
            "2025-07-11T10:00:00.030Z",
            model="gpt-4o-mini",
            attributes={
                "llm.model_name": "gpt-4o-mini",
                "llm.input_messages.0.message.role": "system",
                "llm.input_messages.0.message.content": "You are Software developer.",
                "llm.input_messages.1.message.role": "user",
                "llm.input_messages.1.message.content": prompt,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": reply,
                "openinference.span.kind": "LLM",
            },
        ),
    ]
    objective, answer, _, steps = _score(tmp_path, trace, observations)
    assert objective == task
    assert answer == html  # the crew's output, not "I now can give a great answer ..."
    assert steps == [["thought", ""]]


def test_a_vercel_ai_run_that_ends_on_a_tool_call_has_no_answer(tmp_path: Path) -> None:
    """vercel-aisdk-2025-11-17: `ai.generateText` stopped after its tool ran; its output (and
    the trace's) is the list of tool calls the model asked for, which is no answer."""
    calls = [
        {
            "toolCallId": "call_DgKARp7a7IhJPDczfifMp6Ra",
            "toolName": "getWeather",
            "input": json.dumps({"location": "San Francisco"}),
        }
    ]
    asked = {"prompt": "What is the weather like today in San Francisco?"}
    trace = _trace(
        "df41e597d0a85e0d7a6ae8ebfaa70aa0", "vercel-aisdk", json.dumps(asked), json.dumps(calls)
    )
    observations = [
        _observation(
            "1dc6768109615657",
            None,
            "GENERATION",
            "ai.generateText",
            "2025-11-17T10:00:00.000Z",
            input=asked,
            output=calls,
            attributes={"operation.name": "ai.generateText", "ai.operationId": "ai.generateText"},
        ),
        _observation(
            "91a17a2274bfd23f",
            "1dc6768109615657",
            "GENERATION",
            "ai.generateText.doGenerate",
            "2025-11-17T10:00:00.010Z",
            input=[{"role": "user", "content": [{"type": "text", "text": asked["prompt"]}]}],
            output=calls,
            model="gpt-5",
            attributes={
                "operation.name": "ai.generateText.doGenerate",
                "ai.operationId": "ai.generateText.doGenerate",
                "gen_ai.request.model": "gpt-5",
            },
        ),
        _observation(
            "e9bb8c191e1e4706",
            "1dc6768109615657",
            "TOOL",
            "getWeather",
            "2025-11-17T10:00:01.000Z",
            input={"location": "San Francisco"},
            output={"location": "San Francisco", "temperature": 64},
            attributes={"ai.operationId": "ai.toolCall", "ai.toolCall.name": "getWeather"},
        ),
    ]
    objective, answer, _, steps = _score(tmp_path, trace, observations)
    assert objective == asked["prompt"]
    assert answer == ""  # not the JSON of the tool call
    assert steps == [["tool_call", "getWeather"]]
