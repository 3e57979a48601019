"""How this folder was made: a LangGraph ReAct agent instrumented by Monocle (monocle_apptrace
0.8.15, langgraph 1.2.24, langchain-openai 1.8.1, opentelemetry-sdk 1.45.2), three runs, the
third failing on a tool's exception.

The model is a fake OpenAI server on 127.0.0.1 (`../otlp_capture.py`, with the receiver) that
asks for get_weather once for each city named in the question, then answers with the tool
results. Monocle's two exporters at once: `file` (its own trace files, written to .monocle/ and
moved to files/) and `otlp` (OTLP/HTTP protobuf, sent to a receiver on 127.0.0.1 that keeps each
request's bytes). The requests are written as the Collector's file exporter writes them:
`otlp.json` (OTLP JSON, one request a line, hex ids, enums as numbers) and `otlp.pb` (each
request's bytes after its 4-byte big-endian length).

Run, with no network, in a virtual environment holding the packages above:
    python capture.py OUT_FOLDER
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from otlp_capture import MODEL_URL, QUESTIONS, capture, weather  # noqa: E402


def _run_agent() -> None:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent
    from monocle_apptrace import setup_monocle_telemetry

    setup_monocle_telemetry(workflow_name="weather_agent", monocle_exporters_list="file,otlp")

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return weather(city)

    model = ChatOpenAI(model="gpt-4o-mini", base_url=MODEL_URL, api_key="not-a-key", temperature=0)
    agent = create_react_agent(model, [get_weather], name="weather_agent")
    for question in QUESTIONS:
        try:
            agent.invoke({"messages": [{"role": "user", "content": question}]})
        except ValueError as exc:
            print("run failed:", exc)
    from opentelemetry import trace

    trace.get_tracer_provider().force_flush()  # type: ignore[attr-defined]


if __name__ == "__main__":
    capture(sys.argv[1], _run_agent)
