"""OTLP JSON spans (as bench_otel_import.py generates them) as Langfuse exports them: the
public API's trace with its full observations, each span an observation of type AGENT,
GENERATION or TOOL, the messages, tool arguments and results as its input and output, a
failed call's level ERROR, the other attributes in `metadata.attributes` (as Langfuse keeps
an OTel span)."""

from __future__ import annotations

import json
import time
from typing import Any


def _plain(value: dict[str, Any]) -> Any:
    if "intValue" in value:
        return int(value["intValue"])
    return value.get("stringValue", value.get("boolValue"))


_LANGFUSE_FIELDS = {
    "gen_ai.input.messages": "input",
    "gen_ai.output.messages": "output",
    "gen_ai.tool.call.arguments": "input",
    "gen_ai.tool.call.result": "output",
}
_LANGFUSE_TYPES = {"chat": "GENERATION", "execute_tool": "TOOL", "invoke_agent": "AGENT"}


def _iso(nanoseconds: str) -> str:
    seconds, rest = divmod(int(nanoseconds), 1_000_000_000)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{stamp}.{rest // 1_000_000:03d}Z"


def _observation(span: dict[str, Any]) -> dict[str, Any]:
    """One OTLP span as Langfuse keeps it: its messages, arguments and results as the
    observation's input and output, the other attributes in metadata."""
    attributes = {item["key"]: _plain(item["value"]) for item in span["attributes"]}
    observation: dict[str, Any] = {
        "id": span["spanId"],
        "traceId": span["traceId"],
        "parentObservationId": span["parentSpanId"] or None,
        "type": _LANGFUSE_TYPES[str(attributes["gen_ai.operation.name"])],
        "name": span["name"],
        "startTime": _iso(span["startTimeUnixNano"]),
        "endTime": _iso(span["endTimeUnixNano"]),
        "level": "ERROR" if span["status"] else "DEFAULT",
        "statusMessage": span["status"].get("message"),
        "input": None,
        "output": None,
    }
    for key, field in _LANGFUSE_FIELDS.items():
        if key in attributes:
            text = str(attributes.pop(key))
            observation[field] = json.loads(text) if text[:1] in "[{" else text
    observation["metadata"] = {
        "attributes": attributes,
        "resourceAttributes": {"service.name": "logistics-agents"},
    }
    return observation


def langfuse_trace(spans: list[dict[str, Any]]) -> dict[str, Any]:
    """One agent run's spans (its root first) as one Langfuse public-API trace."""
    root = spans[0]
    return {
        "id": root["traceId"],
        "timestamp": _iso(root["startTimeUnixNano"]),
        "name": root["name"],
        "observations": [_observation(span) for span in spans],
    }
