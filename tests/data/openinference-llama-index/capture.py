"""How this folder was made: a LlamaIndex FunctionAgent (llama-index-core 0.14.25,
llama-index-llms-openai) with one tool, traced by OpenInference's LlamaIndex instrumentation
(openinference-instrumentation-llama-index, opentelemetry-sdk 1.45), asked three questions, the
third's tool raising (the agent hands the error back to the model, which answers with it).

The model is a fake OpenAI server on 127.0.0.1 (`../otlp_capture.py`, with the receiver) that
asks for get_weather once for each city named in the question, then answers with the tool
results. The spans are sent with the OTLP/HTTP exporter to a receiver on 127.0.0.1 that keeps
each request's bytes, and written as the Collector's file exporter writes them: `otlp.json`
(OTLP JSON, one request a line, hex ids, enums as numbers) and `otlp.pb` (each request's bytes
after its 4-byte big-endian length).

Run, with no network, in a virtual environment holding the packages above and
opentelemetry-exporter-otlp-proto-http:
    python capture.py OUT_FOLDER
"""

from __future__ import annotations

import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from otlp_capture import MODEL_URL, capture  # noqa: E402 (tests/data/otlp_capture.py)


def _run_agent() -> None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.llms.openai import OpenAI
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "weather_agent"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    LlamaIndexInstrumentor().instrument(tracer_provider=provider)

    def get_weather(city: str) -> str:
        """The current weather in a city."""
        if city == "Lima":
            raise ValueError("weather service unavailable for Lima")
        return {"Paris": "Paris: 18 C, cloudy", "Tokyo": "Tokyo: 24 C, sunny"}[city]

    agent = FunctionAgent(
        tools=[get_weather],
        llm=OpenAI(model="gpt-4o-mini", api_base=MODEL_URL, api_key="not-a-key"),
        system_prompt="You are a weather assistant.",
        name="weather_agent",
    )

    async def ask() -> None:
        for question in (
            "What is the weather in Paris?",
            "Compare the weather in Tokyo and Paris.",
            "Is it raining in Lima?",
        ):
            await agent.run(question)

    asyncio.run(ask())
    provider.force_flush()


if __name__ == "__main__":
    capture(sys.argv[1], _run_agent)
