"""How this folder was made: a smolagents ToolCallingAgent (smolagents 1.26.0) with one tool,
traced by OpenInference's smolagents instrumentation (openinference-instrumentation-smolagents,
opentelemetry-sdk 1.45), asked three questions, at most three steps each. The third question's
tool raises; the fake model asks for it again each step, so that run ends out of steps with no
answer. Where an agent offers a `final_answer` tool, the fake model answers through it.

With `--planning` (how ../openinference-smolagents-planning was made, with
openinference-instrumentation-smolagents 0.1.43 and opentelemetry-sdk 1.45.2): the same agent
with a planning step before its first action (`planning_interval=5`: that one only), asked the
first question. The planning call's user message is smolagents' planning prompt, which quotes
the task; the run's own span holds the task in its input (`{"task": ...}`).

The fake model, the receiver and the two files written: `../otlp_capture.py`. Run with no
network, the packages above, openai and opentelemetry-exporter-otlp-proto-http installed:
`python capture.py [--planning] OUT_FOLDER`.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from otlp_capture import MODEL_URL, QUESTIONS, capture, tracer_provider, weather  # noqa: E402

PLANNING = "--planning" in sys.argv


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
    planning = {"planning_interval": 5} if PLANNING else {}
    for question in QUESTIONS[:1] if PLANNING else QUESTIONS:
        agent = ToolCallingAgent(
            tools=[get_weather], model=model, max_steps=3, name="weather_agent", **planning
        )
        agent.run(question)
    provider.force_flush()


if __name__ == "__main__":
    capture(sys.argv[-1], _run_agent)
