"""How this folder was made: Strands Agents' own OpenTelemetry spans (strands-agents 1.62.0,
opentelemetry-sdk 1.45.1) of a weather agent asked three questions, the third's tool raising
(Strands hands the error back to the model, which answers with it).

The model is a fake OpenAI server on 127.0.0.1 (`../otlp_capture.py`, with the receiver)
(streaming, as Strands' OpenAIModel asks) that asks for get_weather once for each city named in
the question, then answers with the tool results. Strands' telemetry as its documentation sets
it up, two exporters at once: the OTLP exporter (OTLP/HTTP protobuf, sent to a receiver on
127.0.0.1 that keeps each request's bytes) and the console exporter (the SDK's
ConsoleSpanExporter, written to `console.json`). The requests are written as the Collector's
file exporter writes them: `otlp.json` (OTLP JSON, one request a line, hex ids, enums as
numbers) and `otlp.pb` (each request's bytes after its 4-byte big-endian length).

Run, with no network, in a virtual environment holding strands-agents[openai,otel] 1.62.0 and
opentelemetry-exporter-otlp-proto-http:
    python capture.py OUT_FOLDER
`latest/otlp.json` is the same run with the conventions' newest names (messages in a
`gen_ai.client.inference.operation.details` event; a tool's arguments and result attributes):
    OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental python capture.py OUT_FOLDER
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from otlp_capture import MODEL_URL, QUESTIONS, capture, weather  # noqa: E402


def _run_agent(out: str) -> None:
    from strands import Agent, tool
    from strands.models.openai import OpenAIModel
    from strands.telemetry import StrandsTelemetry

    console = open(os.path.join(out, "console.json"), "w")  # noqa: SIM115 (open until exit)
    StrandsTelemetry().setup_otlp_exporter().setup_console_exporter(out=console)

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return weather(city)

    model = OpenAIModel(
        client_args={"api_key": "not-a-key", "base_url": MODEL_URL},
        model_id="gpt-4o-mini",
    )
    for question in QUESTIONS:
        agent = Agent(model=model, tools=[get_weather], name="weather_agent", callback_handler=None)
        agent(question)  # the tool's error is handed back to the model, not raised
    from opentelemetry import trace

    trace.get_tracer_provider().force_flush()  # type: ignore[attr-defined]


if __name__ == "__main__":
    capture(sys.argv[1], lambda: _run_agent(sys.argv[1]))
