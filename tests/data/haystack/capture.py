"""How this folder was made: Haystack's own OpenTelemetry spans (haystack-ai 3.4.1, its
`opentelemetry-haystack` tracer, `HAYSTACK_CONTENT_TRACING_ENABLED=true`, opentelemetry-sdk
1.45) of an Agent with one tool asked three questions, the third's tool raising (the Agent hands
the error back to the model, which answers with it), and of a pipeline (a prompt builder, then
the chat generator) asked a fourth.

The model is a fake OpenAI server on 127.0.0.1 (`../otlp_capture.py`, with the receiver)
(Haystack's OpenAIChatGenerator) that asks for get_weather once for each city named in the
question, then answers with the tool results. Two exporters at once: OTLP/HTTP protobuf, sent to
a receiver on 127.0.0.1 that keeps each request's bytes, and the SDK's ConsoleSpanExporter,
written to `console.json`. The requests are written as the Collector's file exporter writes
them: `otlp.json` (OTLP JSON, one request a line, hex ids, enums as numbers) and `otlp.pb` (each
request's bytes after its 4-byte big-endian length).

Run, with no network, in a virtual environment holding haystack-ai 3.4.1,
opentelemetry-haystack and opentelemetry-exporter-otlp-proto-http:
    python capture.py OUT_FOLDER
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from otlp_capture import MODEL_URL, QUESTIONS, capture, weather  # noqa: E402


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
        return weather(city)

    generator = OpenAIChatGenerator(
        api_key=Secret.from_token("not-a-key"),
        model="gpt-4o-mini",
        api_base_url=MODEL_URL,
    )
    agent = Agent(
        chat_generator=generator, tools=[get_weather], system_prompt="You are a weather assistant."
    )
    agent.warm_up()
    for question in QUESTIONS:
        agent.run(messages=[ChatMessage.from_user(question)])
    # a pipeline too: a prompt builder, then a chat generator (no tools)
    pipeline = Pipeline()
    template = [ChatMessage.from_user("Answer briefly: {{question}}")]
    pipeline.add_component("prompt", ChatPromptBuilder(template, required_variables=["question"]))
    pipeline.add_component("llm", generator)
    pipeline.connect("prompt.prompt", "llm.messages")
    pipeline.run({"prompt": {"question": "What is a weather front?"}})
    provider.force_flush()


if __name__ == "__main__":
    capture(sys.argv[1], lambda: _run_agent(sys.argv[1]))
