"""How this folder was made: a LangGraph ReAct agent (langgraph 1.2.24, langchain-openai 1.8.1)
traced by OpenInference's LangChain instrumentation (openinference-instrumentation-langchain
0.1.80, opentelemetry-sdk 1.45), what Phoenix's LangChain quick start sets up, three runs, the
third failing on a tool's exception.

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

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from otlp_capture import MODEL_URL, capture  # noqa: E402 (tests/data/otlp_capture.py)


def _run_agent() -> None:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "weather_agent"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    LangChainInstrumentor().instrument(tracer_provider=provider)

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        if city == "Lima":
            raise ValueError("weather service unavailable for Lima")
        return {"Paris": "Paris: 18 C, cloudy", "Tokyo": "Tokyo: 24 C, sunny"}[city]

    model = ChatOpenAI(model="gpt-4o-mini", base_url=MODEL_URL, api_key="not-a-key")
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
    provider.force_flush()


if __name__ == "__main__":
    capture(sys.argv[1], _run_agent)
