"""How this folder was made: a smolagents ToolCallingAgent (smolagents 1.26.0) with one tool
and a planning step before its first action (`planning_interval=5`: that one only), traced by OpenInference's
smolagents instrumentation (openinference-instrumentation-smolagents 0.1.43, opentelemetry-sdk
1.45), asked the first question of `QUESTIONS`, at most three steps. The planning call's user
message is smolagents' planning prompt, which quotes the task; the run's own span holds the
task in its input (`{"task": ...}`).

The fake model, the receiver and the two files written: `../otlp_capture.py`. Run with no
network, the packages above, openai and opentelemetry-exporter-otlp-proto-http installed:
`python capture.py OUT_FOLDER`.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from otlp_capture import MODEL_URL, QUESTIONS, capture, tracer_provider, weather  # noqa: E402


def _run_agent() -> None:
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    provider = tracer_provider()
    SmolagentsInstrumentor().instrument(tracer_provider=provider)

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city.

        Args:
            city: the city
        """
        return weather(city)

    model = OpenAIServerModel(model_id="gpt-4o-mini", api_base=MODEL_URL, api_key="not-a-key")
    agent = ToolCallingAgent(
        tools=[get_weather], model=model, max_steps=3, planning_interval=5, name="weather_agent"
    )
    agent.run(QUESTIONS[0])
    provider.force_flush()


if __name__ == "__main__":
    capture(sys.argv[1], _run_agent)
