"""How this folder was made: a one-agent CrewAI crew (crewai 1.15.30) with one tool, traced by
OpenInference's CrewAI instrumentation (openinference-instrumentation-crewai, opentelemetry-sdk
1.45), run for three tasks, the third's tool raising (CrewAI hands the error back to the model,
which answers with it). The instrumentation traces the crew, the agent and the tool, not the
model calls.

The fake model, the receiver and the two files written: `../otlp_capture.py`. Run with no
network, the packages above and opentelemetry-exporter-otlp-proto-http installed:
`python capture.py OUT_FOLDER`.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from otlp_capture import MODEL_URL, QUESTIONS, capture, tracer_provider, weather  # noqa: E402


def _run_crew() -> None:
    os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
    from crewai import LLM, Agent, Crew, Task
    from crewai.tools import tool
    from openinference.instrumentation.crewai import CrewAIInstrumentor

    provider = tracer_provider()
    CrewAIInstrumentor().instrument(tracer_provider=provider)

    @tool("get_weather")
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return weather(city)

    llm = LLM(model="openai/gpt-4o-mini", base_url=MODEL_URL, api_key="not-a-key")
    for question in QUESTIONS:
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
