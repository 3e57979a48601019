"""How this folder was made: an OpenAI Agents SDK agent (openai-agents 0.24.0, openai 3.63.0:
`Agent(name="weather_agent", tools=[get_weather])`, its tool a `@function_tool` that raises for
a city it cannot serve, the SDK's default failure handling answering the model in its place) on
an OpenAI chat model (`OpenAIChatCompletionsModel`), three runs with `Runner.run_sync`, each
run's items kept as the SDK hands them on: `result.to_input_list()` (Responses API items),
written one run a line to `runs.jsonl` and the first run alone to `run-1.json`. The SDK's own
tracing is off (it would send spans to OpenAI).

No OpenAI server is reached: the model is the fake OpenAI server of `../otlp_capture.py` on
127.0.0.1. Run with no network and `openai-agents` installed: `python capture.py OUT_FOLDER`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from otlp_capture import MODEL_URL, QUESTIONS, serve_model, weather  # noqa: E402


def main(out: str) -> None:
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    serve_model()
    set_tracing_disabled(True)

    @function_tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return weather(city)

    model = OpenAIChatCompletionsModel(
        "gpt-4o-mini", AsyncOpenAI(base_url=MODEL_URL, api_key="not-a-key")
    )
    agent = Agent(
        name="weather_agent",
        instructions="Answer weather questions.",
        model=model,
        tools=[get_weather],
    )
    runs = [Runner.run_sync(agent, question).to_input_list() for question in QUESTIONS]
    Path(out).mkdir(parents=True, exist_ok=True)
    Path(out, "runs.jsonl").write_text("".join(json.dumps(items) + "\n" for items in runs))
    Path(out, "run-1.json").write_text(json.dumps(runs[0], indent=2))
    print(len(runs), "runs")


if __name__ == "__main__":
    main(sys.argv[1])
