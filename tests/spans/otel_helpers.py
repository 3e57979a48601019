"""Spans from real instrumentation, exported as the OpenTelemetry Collector's file exporter
writes them: the SDK's spans, encoded by the official OTLP encoder, one JSON line per export."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import sys
import warnings
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

# The judge tests' fake OpenAI-compatible server (judge_helpers) is reused here.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge"))

__all__ = [
    "GAVE_UP",
    "CollectorFileExporter",
    "collector_line",
    "instrumentation",
    "phoenix_rows",
    "tracer_provider",
    "weather_agent",
]

_ID_KEYS = ("traceId", "spanId", "parentSpanId")

GAVE_UP = "It is 21 C in Paris; I could not convert it to Fahrenheit."
"""weather_agent's answer when it does not call convert again after the failure."""


def _hex_ids(value: Any) -> None:
    """OTLP JSON writes trace and span ids as hex, where the protobuf JSON mapping writes base64."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _ID_KEYS and isinstance(item, str):
                value[key] = base64.b64decode(item).hex()
            else:
                _hex_ids(item)
    elif isinstance(value, list):
        for item in value:
            _hex_ids(item)


def collector_line(spans: Sequence[ReadableSpan]) -> str:
    """One ExportTraceServiceRequest of `spans` as the Collector's file exporter writes it:
    compact OTLP JSON (camelCase, enums as numbers, 64-bit integers as strings, hex ids)."""
    message = json_format.MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    _hex_ids(message)
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_INDEXED = re.compile(r"^(?P<list>.+?)\.(?P<index>\d+)\.(?P<rest>.+)$")


def _phoenix_attributes(attributes: Any) -> dict[str, Any]:
    """Span attributes as the `attributes.*` columns of Phoenix's spans dataframe: one column a
    key, and keys flattened from a list (`llm.input_messages.0.message.role`) gathered into one
    column of objects (`attributes.llm.input_messages`: `[{"message.role": ...}]`)."""
    columns: dict[str, Any] = {}
    for key, value in dict(attributes).items():
        plain = list(value) if isinstance(value, tuple) else value
        indexed = _INDEXED.match(key)
        if indexed is None:
            columns[f"attributes.{key}"] = plain
            continue
        items = columns.setdefault(f"attributes.{indexed['list']}", [])
        while len(items) <= int(indexed["index"]):
            items.append({})
        items[int(indexed["index"])][indexed["rest"]] = plain
    return columns


def phoenix_rows(spans: Sequence[ReadableSpan]) -> list[dict[str, Any]]:
    """The rows of Phoenix's spans dataframe (`get_spans_dataframe`) for SDK spans: context
    ids as hex, times as UTC datetimes, status names, events, `attributes.*` columns."""
    rows = []
    for span in spans:
        context, parent = span.get_span_context(), span.parent
        assert context is not None and span.start_time is not None and span.end_time is not None
        attributes = dict(span.attributes or {})
        rows.append(
            {
                "name": span.name,
                "span_kind": attributes.get("openinference.span.kind", "UNKNOWN"),
                "parent_id": None if parent is None else f"{parent.span_id:016x}",
                "start_time": _EPOCH + timedelta(microseconds=span.start_time // 1000),
                "end_time": _EPOCH + timedelta(microseconds=span.end_time // 1000),
                "status_code": span.status.status_code.name,
                "status_message": span.status.description or "",
                "events": [
                    {"name": event.name, "attributes": dict(event.attributes or {})}
                    for event in span.events
                ],
                "context.span_id": f"{context.span_id:016x}",
                "context.trace_id": f"{context.trace_id:032x}",
                **_phoenix_attributes(attributes),
            }
        )
    return rows


class CollectorFileExporter(SpanExporter):
    """Appends each export as one line to `path`, or each export's protobuf bytes after its
    size (4 big-endian bytes), as the file exporter's `proto` format does."""

    def __init__(self, path: Path, proto: bool = False) -> None:
        self.path = path
        self.proto = proto
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        if self.proto:
            body = encode_spans(spans).SerializeToString()
            with self.path.open("ab") as handle:
                handle.write(len(body).to_bytes(4, "big") + body)
        else:
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(collector_line(spans) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def tracer_provider(
    exporter: SpanExporter, service: str | None = None, version: str | None = None
) -> TracerProvider:
    """An SDK tracer provider that hands every finished span to `exporter` at once; its
    resource names `service` and `version` (service.name, service.version) where given."""
    named = {"service.name": service, "service.version": version}
    resource = Resource.create({key: value for key, value in named.items() if value is not None})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def instrumentation(
    provider: TracerProvider, version: Literal[2, 3, 4, 5, 6] | None = None
) -> Instrumentation:
    """pydantic-ai's built-in OpenTelemetry instrumentation onto `provider`, in its format
    `version` (pydantic-ai's default where None; 2 writes the names pydantic-ai wrote before
    1.0: `agent run`, `running tool`, `tool_arguments`)."""
    if version is None:
        return Instrumentation(settings=InstrumentationSettings(tracer_provider=provider))
    with warnings.catch_warnings():  # pydantic-ai calls 2 to 4 deprecated: as written
        warnings.filterwarnings("ignore", "Instrumentation format versions", UserWarning)
        settings = InstrumentationSettings(tracer_provider=provider, version=version)
    return Instrumentation(settings=settings)


def weather_agent(
    provider: TracerProvider,
    fail_first_convert: bool,
    after_failure: Literal["retry", "answer", "crash"] = "retry",
    version: Literal[2, 3, 4, 5, 6] | None = None,
) -> Agent[None, str]:
    """A pydantic-ai agent with two tools under its built-in OpenTelemetry instrumentation.

    Its FunctionModel says it will look up the weather and calls get_weather, then calls
    convert ("abc" first when `fail_first_convert`: the tool raises ModelRetry and the model
    calls it again with "21"), then answers. `after_failure` "answer": the model answers at once
    instead of calling convert again; "crash": convert raises RuntimeError, which ends the run.
    `version`: the instrumentation's format (`instrumentation`).
    """
    script: list[ModelResponse] = [
        ModelResponse(
            parts=[
                TextPart("Let me look up the weather."),
                ToolCallPart("get_weather", {"city": "Paris"}),
            ]
        ),
        *(
            [ModelResponse(parts=[ToolCallPart("convert", {"celsius": "abc"})])]
            if fail_first_convert
            else []
        ),
        *(
            [ModelResponse(parts=[TextPart(GAVE_UP)])]
            if fail_first_convert and after_failure == "answer"
            else [
                ModelResponse(parts=[ToolCallPart("convert", {"celsius": "21"})]),
                ModelResponse(parts=[TextPart("It is 21 C (69.8 F) in Paris.")]),
            ]
        ),
    ]

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return script.pop(0)

    agent = Agent(
        FunctionModel(model),
        name="weather_agent",
        capabilities=[instrumentation(provider, version)],
    )

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "21 C, sunny"

    @agent.tool_plain
    def convert(celsius: str) -> float:
        """Degrees Celsius in Fahrenheit."""
        try:
            return float(celsius) * 9 / 5 + 32
        except ValueError:
            if after_failure == "crash":
                raise RuntimeError("converter unavailable") from None
            raise ModelRetry("celsius must be a number") from None

    return agent


@pytest.fixture(autouse=True)
def close_agent_loop() -> Iterator[None]:
    """Close the event loop an agent's `run_sync` leaves set on the thread once the test ends:
    left open, it is reported when a later test's garbage collection finds it (the suite turns
    warnings into errors), in whichever test that happens to be."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:  # none set (an earlier test's teardown cleared it)
            return
    if not loop.is_running():
        loop.close()
        asyncio.set_event_loop(None)
