"""How this folder was made: a pydantic-ai agent (`Agent(..., name="weather_agent")` with one
tool, `get_weather`, which raises `ModelRetry` for a city it cannot serve) on an OpenAI chat
model, three runs, each run's history kept as pydantic-ai's docs store one:
`result.all_messages_json()`, written to `json/run-N.json`, and the same histories one a line
in `runs.jsonl`. Made twice, with pydantic-ai-slim 2.78.0 (`OpenAIChatModel`) and 0.4.11
(`OpenAIModel`), into `2.78.0/` and `0.4.11/`.

No OpenAI server is reached: the model is the fake OpenAI server of `../otlp_capture.py` on
127.0.0.1 (tool calls for the cities the question names, then what the tools returned). Run
with no network and `pydantic-ai-slim[openai]` installed: `python capture.py OUT_FOLDER`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from otlp_capture import MODEL_URL, QUESTIONS, serve_model, weather  # noqa: E402


def _model() -> object:
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(base_url=MODEL_URL, api_key="not-a-key")
    try:
        from pydantic_ai.models.openai import OpenAIChatModel
    except ImportError:  # before 1.0
        from pydantic_ai.models.openai import OpenAIModel as OpenAIChatModel
    return OpenAIChatModel("gpt-4o-mini", provider=provider)


def main(out: str) -> None:
    from pydantic_ai import Agent, ModelRetry

    serve_model()
    agent = Agent(_model(), name="weather_agent")

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        try:
            return weather(city)
        except ValueError as exc:
            raise ModelRetry(str(exc)) from exc

    histories = [agent.run_sync(question).all_messages_json() for question in QUESTIONS]
    folder = Path(out, "json")
    folder.mkdir(parents=True, exist_ok=True)
    for number, history in enumerate(histories, start=1):
        (folder / f"run-{number}.json").write_bytes(history)
    Path(out, "runs.jsonl").write_bytes(b"".join(history + b"\n" for history in histories))
    print(len(histories), "runs")


if __name__ == "__main__":
    main(sys.argv[1])
