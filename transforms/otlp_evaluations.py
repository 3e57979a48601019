"""tracegrade's verdicts as OpenTelemetry GenAI evaluation results (`tracegrade push otlp`;
docs/phoenix.md, "Scores as OpenTelemetry"). Pure: builds the OTLP request, sends nothing.

The GenAI semantic conventions (the `gen_ai.evaluation.*` attributes as
opentelemetry-semantic-conventions 0.66b2 names them, now kept by the GenAI conventions'
own repository) define `gen_ai.evaluation.result` as an event parented to the span that was
evaluated. Sent to a traces endpoint, each evaluated span gets one child span,
`gen_ai.evaluation`, of no duration, holding one `gen_ai.evaluation.result` span event per
result: `gen_ai.evaluation.name`, `gen_ai.evaluation.score.value`,
`gen_ai.evaluation.score.label`, `gen_ai.evaluation.explanation`. The child's span id is
derived from the evaluated span's, so the same results sent again are the same span.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

__all__ = ["EVALUATION_EVENT", "EVALUATION_SPAN", "evaluation_request"]

EVALUATION_EVENT = "gen_ai.evaluation.result"
EVALUATION_SPAN = "gen_ai.evaluation"
_NAME = "gen_ai.evaluation.name"
_SCORE = "gen_ai.evaluation.score.value"
_LABEL = "gen_ai.evaluation.score.label"
_EXPLANATION = "gen_ai.evaluation.explanation"


def _value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    return AnyValue(string_value=str(value))


def _attributes(pairs: Mapping[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=k, value=_value(v)) for k, v in pairs.items() if v is not None]


def _child_id(span_hex: str) -> bytes:
    return hashlib.sha256(f"tracegrade:{span_hex}".encode()).digest()[:8]


def evaluation_request(
    evaluated: Sequence[tuple[str, str, Sequence[Mapping[str, Any]]]],
    at_ns: int,
    resource: Mapping[str, str],
) -> ExportTraceServiceRequest:
    """One OTLP request: for each (trace_hex, span_hex, annotations) a `gen_ai.evaluation`
    span under that span, its events the annotations (`transforms.phoenix.annotation` dicts),
    all at `at_ns`; `resource` the resource's attributes (service.name, a Phoenix project)."""
    spans = []
    for trace_hex, span_hex, results in evaluated:
        events = [
            Span.Event(
                time_unix_nano=at_ns,
                name=EVALUATION_EVENT,
                attributes=_attributes(
                    {
                        _NAME: item["name"],
                        _SCORE: item["result"].get("score"),
                        _LABEL: item["result"].get("label"),
                        _EXPLANATION: item["result"].get("explanation"),
                        "tracegrade.trace_id": item["metadata"].get("trace_id"),
                        "tracegrade.run_id": item["metadata"].get("run_id"),
                    }
                ),
            )
            for item in results
        ]
        spans.append(
            Span(
                trace_id=bytes.fromhex(trace_hex),
                span_id=_child_id(span_hex),
                parent_span_id=bytes.fromhex(span_hex),
                name=EVALUATION_SPAN,
                kind=Span.SpanKind.SPAN_KIND_INTERNAL,
                start_time_unix_nano=at_ns,
                end_time_unix_nano=at_ns,
                events=events,
            )
        )
    scope = ScopeSpans(scope=InstrumentationScope(name="tracegrade"), spans=spans)
    resource_spans = ResourceSpans(
        resource=Resource(attributes=_attributes(resource)), scope_spans=[scope]
    )
    return ExportTraceServiceRequest(resource_spans=[resource_spans])
