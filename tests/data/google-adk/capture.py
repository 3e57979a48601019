"""How this folder was made: a Google ADK agent (google-adk 2.13.0, its LiteLlm model through
litellm) with one tool, traced by ADK's own OpenTelemetry spans with the message content in the
spans (`OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`,
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY`; without them ADK's spans hold no
message, and each trace is quarantined `missing_objective`), asked three questions, the third's
tool raising (the run fails). ADK sums up the model's two parallel calls in one more span,
`execute_tool (merged)`.

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
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    from google.adk.agents import LlmAgent
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    provider = tracer_provider()

    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return weather(city)

    agent = LlmAgent(
        name="weather_agent",
        model=LiteLlm(model="openai/gpt-4o-mini", api_base=MODEL_URL, api_key="not-a-key"),
        instruction="You are a weather assistant.",
        tools=[get_weather],
    )
    runner = InMemoryRunner(agent=agent, app_name="weather")

    async def ask() -> None:
        for question in QUESTIONS:
            session = await runner.session_service.create_session(app_name="weather", user_id="u")
            message = types.Content(role="user", parts=[types.Part(text=question)])
            try:
                async for _ in runner.run_async(
                    user_id="u", session_id=session.id, new_message=message
                ):
                    pass
            except ValueError as exc:
                print("run failed:", exc)

    asyncio.run(ask())
    provider.force_flush()


if __name__ == "__main__":
    capture(sys.argv[1], _run_agent)
