"""Langfuse trace exports to span rows: a trace with its observations, as Langfuse hands it out.

Two shapes hold a trace and its observations whole:
- the public API's `GET /api/public/traces/{id}` (TraceWithFullDetails): the trace's fields
  with `observations`, a list of full observations;
- the UI's and the web app's download, `{"trace": {...}, "observations": [...]}` (the trace's
  own `observations` there are stubs without input and output, so the outer list is read).
A file holds one (a pretty-printed `.json`), an array of them, or one per line.

Each observation becomes one Phoenix table row (`storage.spans.phoenix`), so the OTel mapping reads
it as it reads any span: the raw OpenTelemetry attributes Langfuse keeps in
`metadata.attributes` (and `metadata.resourceAttributes`) first, as the instrumentation wrote
them; then what Langfuse's own fields say where those attributes do not: the observation's
`type` as the span kind (GENERATION a model call, TOOL a tool, AGENT an agent, CHAIN,
RETRIEVER), `input` and `output` (JSON text where Langfuse stored an encoded string: decoded
once), a generation's message lists as `gen_ai.input.messages` / `gen_ai.output.messages`, a
tool observation's name as its tool, `level` ERROR with its `statusMessage` as the error. The
trace's own `input` and `output` go to its top observations that have none.

The blob storage integration (the scheduled export to S3 or Azure) writes its `observations`
table (and `observations_v2`, the events table) one row an observation, with ClickHouse's own
snake_case names: `trace_id`, `parent_observation_id` (`""` at the top in events),
`start_time` as `2024-11-06 20:37:00.123` in UTC, `input` and `output` as text, `metadata` a
map of text values. Each row is read as the same observation (`blob_rows`); the spans of a
trace come together across lines and files as any spans do. Its `traces` and `scores` tables
hold no observation and are not read.

Ids as Langfuse keeps them: OTel ids (32 and 16 hex digits) as they are; other ids (the UUIDs
of Langfuse's own SDKs before v3) as the first 32 or 16 hex digits of their SHA-256, the same
id for the same text in every file. The trace's `version` (else its `release`) is the agent's
version (`service.version` on each observation whose attributes do not say one; a blob
export's observations do not carry it), and its tags are its labels (`tag.tags`, as
OpenInference gives them). Not read: scores, user and session, costs and usage
(docs/import.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from storage.spans._messages import decoded, message_fields, text_of
from storage.spans.phoenix import hex_id, top_rows_given

__all__ = [
    "BLOB_COLUMNS",
    "KINDS",
    "MODEL_KEY",
    "TAGS_KEY",
    "VERSION_KEY",
    "blob_rows",
    "called_tools",
    "is_blob_observation",
    "is_langfuse_trace",
    "langfuse_rows",
    "original_ids",
    "run_input",
    "trace_hex",
]

VERSION_KEY = "service.version"
"""The attribute a trace's version or release is given as: the OTel resource's own."""

MODEL_KEY = "llm.model_name"
"""The attribute a generation's `model` is given as, where its own attributes name none
(OpenInference's: the one the mapping reads)."""

TAGS_KEY = "tag.tags"
"""The attribute a trace's tags are given as: OpenInference's (a JSON array of strings)."""


def tags_text(tags: object) -> str | None:
    """A trace's tags as the text of their attribute: a JSON array of the strings; None for
    none (no tags, an empty list, or something other than a list)."""
    if not isinstance(tags, list) or not tags:
        return None
    return json.dumps([str(tag) for tag in tags], ensure_ascii=False, separators=(",", ":"))


KINDS = {
    "GENERATION": "LLM",
    "TOOL": "TOOL",
    "AGENT": "AGENT",
    "CHAIN": "CHAIN",
    "RETRIEVER": "RETRIEVER",
    "EMBEDDING": "EMBEDDING",
}
"""Langfuse observation types as OpenInference span kinds; SPAN and EVENT say nothing."""


def _observations(value: Mapping[str, Any]) -> list[Any] | None:
    if isinstance(value.get("trace"), Mapping) and isinstance(value.get("observations"), list):
        return value["observations"]
    observations = value.get("observations")
    if isinstance(observations, list) and "id" in value and "timestamp" in value:
        return observations
    return None


def is_langfuse_trace(value: object) -> bool:
    """True for a Langfuse trace with its observations, in either shape; an observation that
    is only an id (the trace list's) does not count."""
    if not isinstance(value, Mapping):
        return False
    observations = _observations(value)
    return observations is not None and all(
        isinstance(item, Mapping) and "type" in item for item in observations
    )


def _id(value: Any, digits: int) -> str | None:
    """An OTel id as it is (`hex_id`, Phoenix rows' check); any other id text as a stable
    hex id of the right length."""
    if value is None or value == "":
        return None
    text = str(value)
    found = hex_id(text.replace("-", "") if digits == 32 else text, digits // 2)
    return found or hashlib.sha256(text.encode()).hexdigest()[:digits]


def trace_hex(value: Any) -> str | None:
    """The hex trace id the readers give a trace whose producer named it `value` (an OTel
    trace id, a UUID, any other Langfuse trace id): for labels that name traces so."""
    return _id(value, 32)


def original_ids(value: Mapping[str, Any]) -> dict[str, str]:
    """The Langfuse ids behind the hex ids the rows of `value` carry (a trace with its
    observations, or a blob export's observation row): each trace's and observation's id as
    Langfuse gave it, by the hex id `langfuse_rows` and `blob_rows` turn it into."""
    found: dict[str, str] = {}
    if is_langfuse_trace(value):
        trace = value["trace"] if isinstance(value.get("trace"), Mapping) else value
        observations = _observations(value) or []
        traces = [item.get("traceId") or trace.get("id") for item in observations]
    elif is_blob_observation(value):
        observations, traces = [value], [value.get("trace_id")]
    else:
        return found
    for item, trace_id in zip(observations, traces, strict=True):
        for original, digits in ((trace_id, 32), (item.get("id"), 16)):
            hexed = _id(original, digits)
            if hexed is not None:
                found[hexed] = str(original)
    return found


def called_tools(value: Any, depth: int = 0) -> set[str]:
    """The names of the tools a model output asks for: OpenAI `tool_calls` (also under
    LangChain's `additional_kwargs`), GenAI `tool_call` parts, Anthropic `tool_use` blocks
    (`value` decoded)."""
    names: set[str] = set()
    if depth > 6:
        return names
    if isinstance(value, Mapping):
        kind = value.get("type")
        if kind in ("tool_call", "tool_use", "function_call") and isinstance(
            value.get("name"), str
        ):
            names.add(value["name"])
        function = value.get("function")
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            names.add(function["name"])
        for item in value.values():
            names |= called_tools(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            names |= called_tools(item, depth + 1)
    return names


def _metadata(observation: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    metadata = decoded(observation.get("metadata"))
    if not isinstance(metadata, Mapping):
        return {}, {}
    attributes = metadata.get("attributes")
    resource = metadata.get("resourceAttributes")
    return (
        attributes if isinstance(attributes, Mapping) else {},
        resource if isinstance(resource, Mapping) else {},
    )


def _row(
    observation: Mapping[str, Any], said: tuple[Any, Any], trace_id: str | None, tools: set[str]
) -> dict[str, Any]:
    """One observation as a Phoenix row; `said` is its input and output, decoded."""
    kind = str(observation.get("type") or "").upper()
    name = observation.get("name")
    if kind == "SPAN" and name in tools:
        kind = "TOOL"  # a span named after a tool a model call asked for is that tool's call
    level = str(observation.get("level") or "").upper()
    message = observation.get("statusMessage")
    start = observation.get("startTime")
    row: dict[str, Any] = {
        "context.trace_id": _id(observation.get("traceId") or trace_id, 32),
        "context.span_id": _id(observation.get("id"), 16),
        "parent_id": _id(observation.get("parentObservationId"), 16),
        "name": name,
        "start_time": start,
        "end_time": observation.get("endTime") or start,
        "status_code": "ERROR" if level == "ERROR" else "UNSET",
        "status_message": message if level == "ERROR" else None,
        "events": None,
        "span_kind": KINDS.get(kind),
    }
    attributes, resource = _metadata(observation)
    for key, item in (*attributes.items(), *resource.items()):
        row.setdefault(f"attributes.{key}", item)
    given, got = said
    fields: dict[str, Any] = {}
    if kind != "TOOL":
        fields.update(message_fields(given, got))
        fields.update(_adk_fields(given, got))
    else:
        fields["tool.name"] = name
    # the texts as they are where no message list says more (the mapping would not read them)
    if "gen_ai.input.messages" not in fields:
        fields["input.value"] = text_of(given)
    if "gen_ai.output.messages" not in fields:
        fields["output.value"] = text_of(got)
    model = observation.get("model")
    if kind == "GENERATION" and isinstance(model, str) and model:
        fields[MODEL_KEY] = model  # a model call names its model (an app's own span does not)
    for key, item in fields.items():
        if item is not None:
            row.setdefault(f"attributes.{key}", item)
    return row


def _adk_fields(given: Any, got: Any) -> dict[str, str]:
    """A Google ADK model call's request and reply as ADK's own span attributes, which the
    mapping reads (`gcp.vertex.agent.llm_request`, `...llm_response`): Langfuse keeps them
    only as the observation's input (`{"model", "config", "contents": [{"role", "parts"}]}`,
    the google-genai request) and output (`{"content": {"role", "parts"}, "model_version",
    "finish_reason", ...}`), where OpenInference's ADK instrumentation put them (2026)."""
    fields = {}
    contents = given.get("contents") if isinstance(given, Mapping) else None
    if isinstance(contents, list) and ("model" in given or "config" in given):
        fields["gcp.vertex.agent.llm_request"] = json.dumps(given, ensure_ascii=False)
    content = got.get("content") if isinstance(got, Mapping) else None
    replied = isinstance(content, Mapping) and isinstance(content.get("parts"), list)
    if replied and got.keys() & {"model_version", "finish_reason", "usage_metadata"}:
        fields["gcp.vertex.agent.llm_response"] = json.dumps(got, ensure_ascii=False)
    return fields


def run_input(given: str | None, got: str | None) -> str | None:
    """The trace's input (`given`, its text) where a top span of no kind that holds it is the
    run: the app's own span around a framework's run (Langfuse's SDK,
    `start_as_current_span`), given the trace's input and output as plain text; None where
    either is JSON (a function's arguments and result: `{"args": [...]}`)."""
    texts = (given, got)
    if given is None or any(t is not None and t.lstrip().startswith(("{", "[")) for t in texts):
        return None
    return given


def langfuse_rows(value: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Phoenix rows of a Langfuse trace's observations (`is_langfuse_trace`), in its
    order; the trace's input and output on its top observations that have none, a top
    observation of no kind that holds messages read as the run (LangGraph's), and the trace's
    version on every observation that says none."""
    trace = value["trace"] if isinstance(value.get("trace"), Mapping) else value
    observations = _observations(value) or []
    said = [(decoded(item.get("input")), decoded(item.get("output"))) for item in observations]
    tools: set[str] = set()
    for item, (_, got) in zip(observations, said, strict=True):
        if str(item.get("type")).upper() == "GENERATION":
            tools |= called_tools(got)
    rows = [
        _row(item, texts, trace.get("id"), tools)
        for item, texts in zip(observations, said, strict=True)
    ]
    given, got = text_of(trace.get("input")), text_of(trace.get("output"))
    task = run_input(given, got)
    for row in top_rows_given(rows, given, got):
        asked = row.get("attributes.input.value")
        if row["span_kind"] is None and (
            "attributes.gen_ai.input.messages" in row or (task is not None and asked == task)
        ):
            row["span_kind"] = "CHAIN"
    tag = next(
        (trace[key] for key in ("version", "release") if trace.get(key) not in (None, "")), None
    )
    if tag is not None:
        for row in rows:
            row.setdefault(
                f"attributes.{VERSION_KEY}", tag if isinstance(tag, str) else json.dumps(tag)
            )
    labels = tags_text(trace.get("tags"))
    if labels is not None:
        for row in rows:
            row.setdefault(f"attributes.{TAGS_KEY}", labels)
    return rows


BLOB_COLUMNS = frozenset({"id", "trace_id", "type", "start_time"})
"""Columns every row of a blob export's observations table has (the public API's observations
are camelCase: `traceId`, `startTime`)."""


def is_blob_observation(value: object) -> bool:
    """True for a row of a blob storage export's observations table."""
    return isinstance(value, Mapping) and value.keys() >= BLOB_COLUMNS


def blob_rows(value: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A blob export's observation row (`is_blob_observation`) as one Phoenix row: the
    observation in the public API's names, its metadata's text values decoded once. The
    metadata is a map: an object in JSON, key-value pairs as pyarrow reads a Parquet map."""
    found = value.get("metadata")
    if isinstance(found, list) and all(isinstance(p, tuple) and len(p) == 2 for p in found):
        found = dict(found)
    metadata = (
        {key: decoded(item) for key, item in found.items()} if isinstance(found, Mapping) else found
    )
    observation = {
        "id": value.get("id"),
        "traceId": value.get("trace_id"),
        "parentObservationId": value.get("parent_observation_id") or None,
        "type": value.get("type"),
        "name": value.get("name"),
        "startTime": value.get("start_time"),
        "endTime": value.get("end_time"),
        "level": value.get("level"),
        "statusMessage": value.get("status_message"),
        "metadata": metadata,
    }
    said = (decoded(value.get("input")), decoded(value.get("output")))
    tools = called_tools(said[1]) if str(value.get("type")).upper() == "GENERATION" else set()
    return [_row(observation, said, None, tools)]
