"""How this folder was made: Haystack's own OpenTelemetry spans (haystack-ai 3.4.1, its
`opentelemetry-haystack` tracer, `HAYSTACK_CONTENT_TRACING_ENABLED=true`, opentelemetry-sdk
1.45) of an Agent with one tool asked three questions, the third's tool raising (the Agent hands
the error back to the model, which answers with it), and of a pipeline (a prompt builder, then
the chat generator) asked a fourth.

The model is a fake OpenAI server on 127.0.0.1 (Haystack's OpenAIChatGenerator) that asks for
get_weather once for each city named in the question, then answers with the tool results. Two
exporters at once: OTLP/HTTP protobuf, sent to a receiver on 127.0.0.1 that keeps each
request's bytes, and the SDK's ConsoleSpanExporter, written to `console.json`. The requests are
written as the Collector's file exporter writes them: `otlp.json` (OTLP JSON, one request a
line, hex ids, enums as numbers) and `otlp.pb` (each request's bytes after its 4-byte
big-endian length).

Run, with no network, in a virtual environment holding haystack-ai 3.4.1,
opentelemetry-haystack and opentelemetry-exporter-otlp-proto-http:
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


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _message(body: dict[str, Any]) -> dict[str, Any]:
    """The fake model: tool calls for the cities the question names, then the results; a
    question that names none, a fixed answer."""
    messages = body["messages"]
    if messages[-1]["role"] == "tool":
        results = " ".join(_text(m) for m in messages if m["role"] == "tool")
        return {"role": "assistant", "content": "Here is what I found: " + results}
    question = _text(next(m for m in messages if m["role"] == "user"))
    calls = [c for c in CITIES if c in question]
    if not calls:
        return {"role": "assistant", "content": "A front is where two air masses meet."}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{n}_{c.lower()}",
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps({"city": c})},
            }
            for n, c in enumerate(calls)
        ],
    }


class _Model(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        message = _message(body)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        if body.get("stream"):
            chunks = []
            delta: dict[str, Any] = {"role": "assistant"}
            if message.get("content"):
                delta["content"] = message["content"]
            if message.get("tool_calls"):
                delta["tool_calls"] = [
                    {"index": i, **c} for i, c in enumerate(message["tool_calls"])
                ]
            base = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": body.get("model"),
            }
            chunks.append(
                {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
            )
            chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
            chunks.append(
                {
                    **base,
                    "choices": [],
                    "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
                }
            )
            out = (
                b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
                + b"data: [DONE]\n\n"
            )
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
        else:
            out = json.dumps(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model"),
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


class _Receiver(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        REQUESTS.append(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


def _serve(port, handler):
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def _run_agent(out: str) -> None:
    os.environ["HAYSTACK_CONTENT_TRACING_ENABLED"] = "true"
    from haystack import Pipeline, tracing
    from haystack.components.agents import Agent
    from haystack.components.builders import ChatPromptBuilder
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.dataclasses import ChatMessage
    from haystack.tools import tool
    from haystack.utils import Secret
    from haystack_integrations.tracing.opentelemetry import OpenTelemetryTracer
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    provider = TracerProvider(resource=Resource.create({"service.name": "weather_agent"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    console = open(os.path.join(out, "console.json"), "w")  # noqa: SIM115 (open until exit)
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=console)))
    trace.set_tracer_provider(provider)
    tracing.enable_tracing(OpenTelemetryTracer(trace.get_tracer("haystack")))

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        if city == "Lima":
            raise ValueError("weather service unavailable for Lima")
        return {"Paris": "Paris: 18 C, cloudy", "Tokyo": "Tokyo: 24 C, sunny"}[city]

    generator = OpenAIChatGenerator(
        api_key=Secret.from_token("not-a-key"),
        model="gpt-4o-mini",
        api_base_url="http://127.0.0.1:18080/v1",
    )
    agent = Agent(
        chat_generator=generator, tools=[get_weather], system_prompt="You are a weather assistant."
    )
    agent.warm_up()
    for question in (
        "What is the weather in Paris?",
        "Compare the weather in Tokyo and Paris.",
        "Is it raining in Lima?",
    ):
        agent.run(messages=[ChatMessage.from_user(question)])
    # a pipeline too: a prompt builder, then a chat generator (no tools)
    pipeline = Pipeline()
    template = [ChatMessage.from_user("Answer briefly: {{question}}")]
    pipeline.add_component("prompt", ChatPromptBuilder(template, required_variables=["question"]))
    pipeline.add_component("llm", generator)
    pipeline.connect("prompt.prompt", "llm.messages")
    pipeline.run({"prompt": {"question": "What is a weather front?"}})
    provider.force_flush()


def _write(out: str) -> None:
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

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
    _run_agent(sys.argv[1])
    time.sleep(1)
    _write(sys.argv[1])
    print(len(REQUESTS), "requests")


if __name__ == "__main__":
    main()
