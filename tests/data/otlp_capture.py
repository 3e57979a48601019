"""What the capture scripts of tests/data share (`strands/`, `haystack/`, `monocle-0.8/`): a
fake OpenAI chat server and an OTLP/HTTP receiver on 127.0.0.1, and the received requests
written as the Collector's file exporter writes them.

The fake model asks for the tool `get_weather` once for each city a question names (Paris,
Tokyo, Lima), then answers "Here is what I found: " and the tool results; a question that names
none gets a fixed answer, and smolagents' planning prompt a one-line plan. It answers streamed (server-sent events) when asked to. The receiver
keeps the bytes of each request to /v1/traces. `capture` starts both, runs the agent, and
writes `otlp.json` (OTLP JSON, one request a line, hex ids, enums as numbers) and `otlp.pb`
(each request's bytes after its 4-byte big-endian length).
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL_URL = "http://127.0.0.1:18080/v1"
"""The fake OpenAI server's base URL."""

QUESTIONS = (
    "What is the weather in Paris?",
    "Compare the weather in Tokyo and Paris.",
    "Is it raining in Lima?",
)
"""What each capture asks its agent, one run each."""


FILE_PROMPTS = (
    "What does notes.txt say?",
    "Compare notes.txt and weather.txt.",
    "What does missing.txt say?",
)
"""What the coding-agent captures (Gemini CLI, Qwen Code) ask, one session each: the third
names a file that is not there."""

FILES = {"notes.txt": "Paris: 18 C, cloudy\n", "weather.txt": "Tokyo: 24 C, sunny\n"}
"""The files those captures' folder holds."""


def weather(city: str) -> str:
    """The captures' tool: the weather in Paris or Tokyo; for Lima it raises."""
    if city == "Lima":
        raise ValueError("weather service unavailable for Lima")
    return {"Paris": "Paris: 18 C, cloudy", "Tokyo": "Tokyo: 24 C, sunny"}[city]


WEATHER_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
"""`weather` as an OpenAI function tool."""


def openai_answer(client: Any, question: str, get_weather: Callable[[str], str]) -> str:
    """The plain OpenAI function-calling agent of the captures that trace functions (LangSmith's
    `@traceable`, Opik's `@opik.track`, Weave's `@weave.op`): ask the model with `client`, run
    each tool call it asks for with `get_weather`, until it answers."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    while True:
        reply = (
            client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=WEATHER_TOOLS
            )
            .choices[0]
            .message
        )
        if not reply.tool_calls:
            return str(reply.content or "")
        messages.append(reply.model_dump(exclude_none=True))
        for call in reply.tool_calls:
            result = get_weather(json.loads(call.function.arguments)["city"])
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


class JsonServer(BaseHTTPRequestHandler):
    """A stand-in server's handler that logs nothing and answers JSON (`answer`)."""

    def log_message(self, *args: Any) -> None:
        pass

    def answer(self, value: Any, kind: str = "application/json") -> None:
        """Send `value`: bytes as they are, anything else as JSON."""
        out = value if isinstance(value, bytes) else json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def langgraph_agent() -> Any:
    """LangGraph's prebuilt ReAct agent `weather_agent` on the fake model, `weather` its one tool
    (the LangGraph captures')."""
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return weather(city)

    model = ChatOpenAI(model="gpt-4o-mini", base_url=MODEL_URL, api_key="not-a-key")
    return create_react_agent(model, [get_weather], name="weather_agent")


def tracer_provider() -> Any:
    """The OpenTelemetry SDK's tracer provider, set as the global one, whose spans (service
    `weather_agent`) go to the receiver with the OTLP/HTTP exporter."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "weather_agent"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider


REQUESTS: list[bytes] = []
CITIES = ("Paris", "Tokyo", "Lima")


PLANNING_PROMPT = "You are a world expert at analyzing a situation"
"""How smolagents' planning step (`planning_interval`) begins its prompt: the fake model
answers it with a one-line plan."""


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _message(body: dict[str, Any]) -> dict[str, Any]:
    """The fake model: tool calls for the cities the question names, then the results; a
    question that names none, a fixed answer. Where the agent offers a `final_answer` tool
    (smolagents), the answer is given through it, as that framework asks."""
    messages = body["messages"]
    if _text(messages[0]).startswith(PLANNING_PROMPT):
        return {"role": "assistant", "content": "1. Look up the weather.\n<end_plan>"}
    # a tool's result: a `tool` message, or smolagents' user message "Observation:\n..."
    observed = [
        _text(m).removeprefix("Observation:\n")
        for m in messages
        if m["role"] == "tool" or (m["role"] == "user" and _text(m).startswith("Observation:"))
    ]
    if observed and (messages[-1]["role"] == "tool" or _text(messages[-1]).startswith("Obs")):
        answer = "Here is what I found: " + " ".join(observed)
        offered = [t.get("function", {}).get("name") for t in body.get("tools") or []]
        if "final_answer" in offered and not any(
            "final_answer" in json.dumps(m.get("tool_calls") or []) for m in messages
        ):
            return _calls([("final_answer", {"answer": answer})])
        return {"role": "assistant", "content": answer}
    question = _text(next(m for m in messages if m["role"] == "user"))
    calls = [c for c in CITIES if c in question]
    if not calls:
        return {"role": "assistant", "content": "A front is where two air masses meet."}
    return _calls([("get_weather", {"city": city}) for city in calls])


def _calls(calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """A reply that asks for these tools (name, arguments) and says nothing."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{n}_{(arguments.get('city') or name).lower()}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for n, (name, arguments) in enumerate(calls)
        ],
    }


_USAGE = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}


def _events(body: dict[str, Any], message: dict[str, Any], finish: str) -> bytes:
    """A chat completion streamed as server-sent events, as OpenAI's API streams one: the
    text in one chunk, each tool call in a chunk of its own, then the finish reason, then the
    usage."""
    base = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model"),
    }
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": message.get("content")}]
    deltas += [
        {"tool_calls": [{"index": index, **call}]}
        for index, call in enumerate(message.get("tool_calls") or [])
    ]
    chunks = [
        *({**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas),
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**base, "choices": [], "usage": _USAGE},
    ]
    sent = b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks)
    return sent + b"data: [DONE]\n\n"


class _Model(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        message = _message(body)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        if body.get("stream"):
            out, kind = _events(body, message, finish), "text/event-stream"
        else:
            completion = {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": _USAGE,
            }
            out, kind = json.dumps(completion).encode(), "application/json"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


class _Receiver(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path.endswith("/v1/traces"):  # not logs or metrics an SDK may send too
            REQUESTS.append(body)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


def _serve(port: int, handler: type[BaseHTTPRequestHandler]) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()


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


def serve_model() -> None:
    """Start the fake OpenAI chat server at `MODEL_URL` (for a capture that receives its
    telemetry by other means than OTLP: `langsmith/`)."""
    _serve(18080, _Model)


def capture(out: str, run_agent: Callable[[], None]) -> None:
    """Start the fake model and the receiver, run the agent (its spans exported to the
    receiver by the OTLP/HTTP exporter the environment names), write what was received."""
    serve_model()
    _serve(14318, _Receiver)
    os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "http://127.0.0.1:14318/v1/traces"
    os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    run_agent()
    time.sleep(1)
    _write(out)
    print(len(REQUESTS), "requests")
