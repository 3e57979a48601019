"""How this folder was made: a LangGraph ReAct agent instrumented by Monocle (monocle_apptrace
0.8.15, langgraph 1.2.24, langchain-openai 1.8.1, opentelemetry-sdk 1.45.2), three runs, the
third failing on a tool's exception.

The model is a fake OpenAI server on 127.0.0.1 that asks for get_weather once for each city
named in the question, then answers with the tool results. Monocle's two exporters at once:
`file` (its own trace files, written to .monocle/ and moved to files/) and `otlp` (OTLP/HTTP
protobuf, sent to a receiver on 127.0.0.1 that keeps each request's bytes). The requests are
written as the Collector's file exporter writes them: `otlp.json` (OTLP JSON, one request a
line, hex ids, enums as numbers) and `otlp.pb` (each request's bytes after its 4-byte
big-endian length).

Run, with no network, in a virtual environment holding the packages above:
    python capture.py OUT_FOLDER
"""

from __future__ import annotations

import base64
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REQUESTS: list[bytes] = []
CITIES = ("Paris", "Tokyo", "Lima")


def _completion(body: dict[str, Any]) -> dict[str, Any]:
    """The fake model: tool calls for the cities the question names, then the results."""
    messages = body["messages"]
    if messages[-1]["role"] == "tool":
        results = " ".join(m["content"] for m in messages if m["role"] == "tool")
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "Here is what I found: " + results,
        }
    else:
        question = next(m for m in messages if m["role"] == "user")["content"]
        calls = [city for city in CITIES if city in question]
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{number}_{city.lower()}",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
                }
                for number, city in enumerate(calls)
            ],
        }
    finish = "stop" if message["content"] else "tool_calls"
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "gpt-4o-mini"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
    }


class _Model(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        out = json.dumps(_completion(body)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


class _Receiver(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        REQUESTS.append(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


def _serve(port: int, handler: type[BaseHTTPRequestHandler]) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def _run_agent() -> None:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent
    from monocle_apptrace import setup_monocle_telemetry

    setup_monocle_telemetry(workflow_name="weather_agent", monocle_exporters_list="file,otlp")

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        if city == "Lima":
            raise ValueError("weather service unavailable for Lima")
        return {"Paris": "Paris: 18 C, cloudy", "Tokyo": "Tokyo: 24 C, sunny"}[city]

    model = ChatOpenAI(model="gpt-4o-mini", base_url="http://127.0.0.1:18080/v1", temperature=0)
    agent = create_react_agent(model, [get_weather], name="weather_agent")
    for question in (
        "What is the weather in Paris?",
        "Compare the weather in Tokyo and Paris.",
        "Is it raining in Lima?",
    ):
        try:
            agent.invoke({"messages": [{"role": "user", "content": question}]})
        except ValueError as exc:
            print("run failed:", exc)


def _write(out: str) -> None:
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    with (
        open(os.path.join(out, "otlp.json"), "w") as lines,
        open(os.path.join(out, "otlp.pb"), "wb") as frames,
    ):
        for body in REQUESTS:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            value = json_format.MessageToDict(request, use_integers_for_enums=True)
            for resource in value.get("resourceSpans", []):
                for scope in resource.get("scopeSpans", []):
                    for span in scope.get("spans", []):
                        for key in ("traceId", "spanId", "parentSpanId"):
                            if key in span:
                                span[key] = base64.b64decode(span[key]).hex()
            lines.write(json.dumps(value, separators=(",", ":")) + "\n")
            frames.write(len(body).to_bytes(4, "big") + body)


def main() -> None:
    _serve(18080, _Model)
    _serve(14318, _Receiver)
    os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "http://127.0.0.1:14318/v1/traces"
    os.environ["OPENAI_API_KEY"] = "not-a-key"
    _run_agent()
    from opentelemetry import trace

    trace.get_tracer_provider().force_flush()  # type: ignore[attr-defined]
    time.sleep(1)
    _write(sys.argv[1])
    print(len(REQUESTS), "requests")


if __name__ == "__main__":
    main()
