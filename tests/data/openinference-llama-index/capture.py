"""How this folder was made: a LlamaIndex FunctionAgent (llama-index-core 0.14.25,
llama-index-llms-openai) with one tool, traced by OpenInference's LlamaIndex instrumentation
(openinference-instrumentation-llama-index, opentelemetry-sdk 1.45), asked three questions, the
third's tool raising (the agent hands the error back to the model, which answers with it).

The fake model, the receiver and the two files written: `../otlp_capture.py`. Run with no
network, the packages above and opentelemetry-exporter-otlp-proto-http installed:
`python capture.py OUT_FOLDER`.
"""

from __future__ import annotations

import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from otlp_capture import MODEL_URL, QUESTIONS, capture, tracer_provider, weather  # noqa: E402


def _run_agent() -> None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.llms.openai import OpenAI
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    provider = tracer_provider()
    LlamaIndexInstrumentor().instrument(tracer_provider=provider)

    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return weather(city)

    agent = FunctionAgent(
        tools=[get_weather],
        llm=OpenAI(model="gpt-4o-mini", api_base=MODEL_URL, api_key="not-a-key"),
        system_prompt="You are a weather assistant.",
        name="weather_agent",
    )

    async def ask() -> None:
        for question in QUESTIONS:
            await agent.run(question)

    asyncio.run(ask())
    provider.force_flush()


if __name__ == "__main__":
    capture(sys.argv[1], _run_agent)
