"""How this folder was made: a smolagents ToolCallingAgent (smolagents 1.26.0) with one tool,
traced by OpenInference's smolagents instrumentation (openinference-instrumentation-smolagents,
opentelemetry-sdk 1.45), asked three questions, at most three steps each. The third question's
tool raises; the fake model asks for it again each step, so that run ends out of steps with no
answer.

The model is a fake OpenAI server on 127.0.0.1 (`../otlp_capture.py`, with the receiver) that
asks for get_weather once for each city named in the question, then gives the tool results
through smolagents' `final_answer` tool. The spans are sent with the OTLP/HTTP exporter to a
receiver on 127.0.0.1 that keeps each request's bytes, and written as the Collector's file
exporter writes them: `otlp.json` (OTLP JSON, one request a line, hex ids, enums as numbers)
and `otlp.pb` (each request's bytes after its 4-byte big-endian length).

Run, with no network, in a virtual environment holding smolagents[openai] 1.26.0,
openinference-instrumentation-smolagents and opentelemetry-exporter-otlp-proto-http:
    python capture.py OUT_FOLDER
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from otlp_capture import MODEL_URL, capture  # noqa: E402 (tests/data/otlp_capture.py)


def _run_agent() -> None:
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    provider = TracerProvider(resource=Resource.create({"service.name": "weather_agent"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    SmolagentsInstrumentor().instrument(tracer_provider=provider)

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city.

        Args:
            city: the city
        """
        if city == "Lima":
            raise ValueError("weather service unavailable for Lima")
        return {"Paris": "Paris: 18 C, cloudy", "Tokyo": "Tokyo: 24 C, sunny"}[city]

    model = OpenAIServerModel(model_id="gpt-4o-mini", api_base=MODEL_URL, api_key="not-a-key")
    for question in (
        "What is the weather in Paris?",
        "Compare the weather in Tokyo and Paris.",
        "Is it raining in Lima?",
    ):
        agent = ToolCallingAgent(
            tools=[get_weather], model=model, max_steps=3, name="weather_agent"
        )
        agent.run(question)
    provider.force_flush()


if __name__ == "__main__":
    capture(sys.argv[1], _run_agent)
