"""A real instrumented agent that traces into a real Phoenix (scripts/phoenix_server.py starts
one on 127.0.0.1): a pydantic-ai agent with two tools, its
built-in OpenTelemetry instrumentation, the official OTLP/HTTP exporter, and a fake OpenAI
model on 127.0.0.1 (scripts/_scripted_agent.py). Nothing leaves the machine."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from _scripted_agent import QUESTIONS, serve_model, tool_result  # noqa: E402
from phoenix_server import free_port, phoenix_serving  # noqa: E402

__all__ = ["free_port", "phoenix_serving", "run_agent"]


def run_agent(endpoint: str, project: str, rounds: int = 1) -> int:
    """The agent answers QUESTIONS `rounds` times, each answer one trace in `project`; returns
    how many traces it made. Its spans are exported as each ends (SimpleSpanProcessor)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.models import override_allow_model_requests
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model_server, url = serve_model()
    resource = Resource.create(
        {"service.name": "support-agent", "openinference.project.name": project}
    )
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{endpoint}/v1/traces")))
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url=url, api_key="none"))
    settings = InstrumentationSettings(tracer_provider=provider)
    agent = Agent(
        model,
        name="support_agent",
        system_prompt="You are a support agent.",
        capabilities=[Instrumentation(settings=settings)],
    )

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Weather in a city."""
        return tool_result("get_weather", {"city": city})[1]

    @agent.tool_plain
    def lookup_invoice(invoice_id: str) -> str:
        """An invoice by id."""
        succeeded, text = tool_result("lookup_invoice", {"invoice_id": invoice_id})
        if not succeeded:
            raise ModelRetry(text)
        return text

    try:
        with override_allow_model_requests(True):  # its model is the fake on 127.0.0.1
            for _ in range(rounds):
                for question in QUESTIONS:
                    agent.run_sync(question)
    finally:
        provider.shutdown()
        model_server.shutdown()
        model_server.server_close()
    return rounds * len(QUESTIONS)
