"""How the files beside this one were written: Traceloop's OpenLLMetry tracing a plain OpenAI
function-calling agent (`traceloop-sdk-*.jsonl`) and LangGraph's prebuilt ReAct agent
(`langgraph-*.jsonl`, `--langgraph`), its spans as the OpenTelemetry SDK writes them
(`span.to_json()`, one a line). Not run by the tests (traceloop-sdk is not a dependency of
tracegrade).

The model is a fake OpenAI-compatible server on 127.0.0.1 (this file starts it): it asks for
`get_weather` until the conversation holds a successful result, then answers with it. The
second question's first call fails (the tool raises; the agent hands the error back, LangGraph's
ToolNode as `Error: ... Please fix your mistakes.`) and the model asks again with another city.

Run, in a virtual environment of its own (the files were written with traceloop-sdk 0.52.6,
the last release before OpenLLMetry took the GenAI names, and 0.62.4; openai 3.63.0):

    pip install traceloop-sdk==0.52.6 openai
    TRACELOOP_TELEMETRY=false python capture.py traceloop-sdk-0.52.6.jsonl
    pip install opentelemetry-instrumentation-langchain==0.52.6 langchain-openai langgraph
    TRACELOOP_TELEMETRY=false python capture.py langgraph-0.52.6.jsonl --langgraph

(langchain-core 1.8.3, langchain-openai 1.8.1, langgraph 1.2.24.)
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from openai import OpenAI
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from traceloop.sdk import Traceloop
from traceloop.sdk.decorators import tool, workflow

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def _reply(messages: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
    user = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    city = "Berlin" if "Berlin" in user else "Atlantis"
    results = [m["content"] for m in messages if m["role"] == "tool"]
    if not results or (results[-1].startswith("Error") and len(results) < 2):
        asked = city if not results else "Atlantis, Bahamas"
        call = {"name": "get_weather", "arguments": json.dumps({"city": asked})}
        calls = [{"id": f"call_{len(results) + 1}", "type": "function", "function": call}]
        return {"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls"
    return {"role": "assistant", "content": f"The weather in {city}: {results[-1]}"}, "stop"


class _FakeOpenAI(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        message, finish = _reply(body["messages"])
        data = json.dumps(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


class _LinesExporter(SpanExporter):
    def __init__(self, path: str) -> None:
        self.handle = open(path, "w")  # noqa: SIM115 (open until shutdown)

    def export(self, spans: Any) -> SpanExportResult:
        for span in spans:
            self.handle.write(span.to_json(indent=None) + "\n")
        self.handle.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.handle.close()


QUESTIONS = ("What's the weather in Berlin right now?", "Is it raining in Atlantis?")


def _weather(city: str) -> str:
    if city == "Atlantis":
        raise ValueError(f"unknown city {city!r}")
    return "cloudy, 15 C"


def _langgraph(base_url: str) -> None:
    from langchain_core.tools import tool as langchain_tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import ToolNode, create_react_agent

    @langchain_tool
    def get_weather(city: str) -> str:
        """Current weather of a city."""
        return _weather(city)

    model = ChatOpenAI(model="gpt-4o-mini", base_url=base_url, api_key="sk-fake")
    agent = create_react_agent(
        model,
        ToolNode([get_weather], handle_tool_errors=True),
        prompt="You answer weather questions with get_weather.",
    )
    for question in QUESTIONS:
        print(agent.invoke({"messages": [("user", question)]})["messages"][-1].content)


def main(out: str, langgraph: bool) -> None:
    server = HTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Traceloop.init(
        app_name="weather-agent",
        exporter=_LinesExporter(out),
        disable_batch=True,
        telemetry_enabled=False,
    )
    base_url = f"http://127.0.0.1:{server.server_port}/v1"
    if langgraph:
        _langgraph(base_url)
        server.shutdown()
        return
    client = OpenAI(base_url=base_url, api_key="sk-fake")

    @tool(name="get_weather")
    def get_weather(city: str) -> str:
        return _weather(city)

    @workflow(name="weather_agent")
    def run(question: str) -> str | None:
        messages: list[Any] = [
            {"role": "system", "content": "You answer weather questions with get_weather."},
            {"role": "user", "content": question},
        ]
        while True:
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=TOOLS
            ).choices[0]
            if not reply.message.tool_calls:
                return reply.message.content
            messages.append(reply.message.model_dump(exclude_none=True))
            for call in reply.message.tool_calls:
                try:
                    result = get_weather(**json.loads(call.function.arguments))
                except ValueError as exc:
                    result = f"Error: {exc}"
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})

    for question in QUESTIONS:
        print(run(question))
    server.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], "--langgraph" in sys.argv[2:])
