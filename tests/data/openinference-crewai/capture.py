"""How this folder was made: a one-agent CrewAI crew (crewai 1.15.30) with one tool, traced by
OpenInference's CrewAI instrumentation (openinference-instrumentation-crewai, opentelemetry-sdk
1.45), run for three tasks, the third's tool raising (CrewAI hands the error back to the model,
which answers with it). The instrumentation traces the crew, the agent and the tool, not the
model calls.

The model is a fake OpenAI server on 127.0.0.1 (`../otlp_capture.py`, with the receiver) that
asks for get_weather once for each city named in the task, then answers with the tool results.
The spans are sent with the OTLP/HTTP exporter to a receiver on 127.0.0.1 that keeps each
request's bytes, and written as the Collector's file exporter writes them: `otlp.json` (OTLP
JSON, one request a line, hex ids, enums as numbers) and `otlp.pb` (each request's bytes after
its 4-byte big-endian length).

Run, with no network, in a virtual environment holding the packages above and
opentelemetry-exporter-otlp-proto-http:
    python capture.py OUT_FOLDER
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from otlp_capture import MODEL_URL, capture  # noqa: E402 (tests/data/otlp_capture.py)


def _run_crew() -> None:
    os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
    from crewai import LLM, Agent, Crew, Task
    from crewai.tools import tool
    from openinference.instrumentation.crewai import CrewAIInstrumentor
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "weather_agent"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    CrewAIInstrumentor().instrument(tracer_provider=provider)

    @tool("get_weather")
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        if city == "Lima":
            raise ValueError("weather service unavailable for Lima")
        return {"Paris": "Paris: 18 C, cloudy", "Tokyo": "Tokyo: 24 C, sunny"}[city]

    llm = LLM(model="openai/gpt-4o-mini", base_url=MODEL_URL, api_key="not-a-key")
    for question in (
        "What is the weather in Paris?",
        "Compare the weather in Tokyo and Paris.",
        "Is it raining in Lima?",
    ):
        agent = Agent(
            role="weather assistant",
            goal="Answer questions about the weather",
            backstory="You know the weather.",
            tools=[get_weather],
            llm=llm,
        )
        task = Task(description=question, expected_output="A short answer.", agent=agent)
        Crew(agents=[agent], tasks=[task]).kickoff()
    provider.force_flush()


if __name__ == "__main__":
    capture(sys.argv[1], _run_crew)
