"""What each OpenTelemetry span says, in one row of plain columns: its kind (model call, tool,
retrieval, agent, other), its tool, its texts, its error.

The readers (storage) turn OTLP JSON, OTLP protobuf and Phoenix span tables into rows of
`RAW_SPAN_SCHEMA`, keeping only the attributes `is_wanted_key` names; `span_facts` turns those
into `FACT_SCHEMA` rows, which is what the trace mapping (`transforms.otel`) reads. Both
conventions are read here, GenAI (`gen_ai.*`) and OpenInference, and Traceloop's OpenLLMetry
(`traceloop.*`, `llm.request.type`) before it took the GenAI names; docs/import.md has the
tables.
"""

from __future__ import annotations

import json

import polars as pl

from transforms._beeai import BEEAI_KEYS, beeai_events
from transforms._haystack import HAYSTACK_KEYS
from transforms._llama_index import EVENT_REPR
from transforms._otel_frameworks import framework_texts, haystack_kind
from transforms._otel_messages import (
    FLAT_MESSAGE_PREFIXES,
    flat_message_texts,
    gemini_texts,
    json_message_texts,
)
from transforms._pydantic_ai_spans import (
    AGENT_NAME,
    EVENTS_KEY,
    PARAMETERS_KEY,
    PYDANTIC_AI_ARGUMENTS,
    PYDANTIC_AI_RESULT,
    pydantic_ai_spans,
)
from transforms.config.otel import OtelImportConfig

__all__ = [
    "ATTRIBUTE_KEYS",
    "ATTRIBUTE_PREFIXES",
    "FACT_SCHEMA",
    "KINDS",
    "RAW_SPAN_SCHEMA",
    "span_facts",
    "wanted_key_filter",
]

ATTRIBUTE = pl.Struct({"key": pl.String, "value": pl.String})

_SPAN_IDENTITY: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "record_number": pl.Int64(),
    "trace_hex": pl.String(),
    "span_hex": pl.String(),
    "parent_hex": pl.String(),
    "name": pl.String(),
    "start_ns": pl.Int64(),
    "end_ns": pl.Int64(),
    "status": pl.String(),
}
"""Where a span was read, its ids, name, times and status: the columns a reader's rows and
the mapping's facts share."""

RAW_SPAN_SCHEMA: dict[str, pl.DataType] = {
    **_SPAN_IDENTITY,
    "status_message": pl.String(),
    "exception_message": pl.String(),
    "attributes": pl.List(ATTRIBUTE),
}
"""One span as a reader hands it over: ids as lowercase hex (null when missing or malformed),
times in Unix nanoseconds, status UNSET/OK/ERROR, and the wanted attributes as text (the span's
own first, then its resource's, so the first of a key wins)."""

ADK_KEYS = (
    "gcp.vertex.agent.llm_request",
    "gcp.vertex.agent.llm_response",
    "gcp.vertex.agent.tool_call_args",
    "gcp.vertex.agent.tool_response",
)
"""Google ADK's own span attributes: a model call's Gemini request and reply, a tool call's
arguments and result (JSON text; `{}` where a span has none)."""

TRACELOOP_KEYS = (
    "llm.request.type",
    "traceloop.span.kind",
    "traceloop.entity.name",
    "traceloop.entity.input",
    "traceloop.entity.output",
)
"""Traceloop's OpenLLMetry names (traceloop-sdk 0.52 and before; later versions add the GenAI
ones): a model call's request type (`chat`, `completion`), a decorated function's kind
(`workflow`, `task`, `agent`, `tool`), name, arguments and result (JSON text)."""

VERCEL_KEYS = (
    "ai.operationId",
    "ai.prompt",
    "ai.prompt.messages",
    "ai.response.text",
    "ai.toolCall.name",
    "ai.toolCall.args",
    "ai.toolCall.result",
)
"""The Vercel AI SDK's telemetry names: what a span is (`ai.generateText`, a run; its
`.doGenerate`, a model call; `ai.toolCall`), what a run was asked (`{"system", "prompt"}` or
`{"system", "messages"}`) and the messages a model call was sent (JSON text, content as parts),
the text a call or run generated, a tool call's name, arguments and result (JSON text)."""

ATTRIBUTE_KEYS = (
    "gen_ai.operation.name",
    "gen_ai.agent.name",
    "gen_ai.tool.name",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.args",
    "gen_ai.output",
    "final_result",
    EVENTS_KEY,
    PARAMETERS_KEY,
    PYDANTIC_AI_ARGUMENTS,
    PYDANTIC_AI_RESULT,
    "llm.model_name",
    "openinference.span.kind",
    "input.value",
    "output.value",
    "tool.name",
    "tool.parameters",
    "agent.name",
    AGENT_NAME,
    "service.name",
    "service.version",
    "tag.tags",
    "langfuse.trace.tags",
    *ADK_KEYS,
    *TRACELOOP_KEYS,
    *VERCEL_KEYS,
    *HAYSTACK_KEYS,
    *BEEAI_KEYS,
)
"""Attributes the mapping reads by exact key (configured keys are added to these)."""

ATTRIBUTE_PREFIXES = (*FLAT_MESSAGE_PREFIXES, "retrieval.documents.")
"""Attributes the mapping reads by key prefix (flattened lists)."""

KINDS = ("llm", "tool", "retrieval", "agent", "chain", "other")
"""What a span is to the mapping; llm, tool and retrieval spans become steps."""

FACT_SCHEMA: dict[str, pl.DataType] = {
    **_SPAN_IDENTITY,
    "error": pl.String(),
    "kind": pl.String(),
    "agent_name": pl.String(),
    "agent_span": pl.String(),
    "service_name": pl.String(),
    "service_version": pl.String(),
    "tags": pl.String(),
    "tool_name": pl.String(),
    "tool_input": pl.String(),
    "tool_output": pl.String(),
    "text": pl.String(),
    "user_text": pl.String(),
    "domain": pl.String(),
    "success_value": pl.String(),
    "confidence_value": pl.String(),
}
"""One span as the trace mapping reads it (see `span_facts`)."""

_LLM_OPERATIONS = ("chat", "text_completion", "generate_content", "call_llm")
"""GenAI operation names of a model call (`call_llm`: any-agent's spelling)."""
_TOOL_CALLS_OUTPUT = r'^\s*\[\s*\{\s*"tool\.name"'
"""A `gen_ai.output` that lists the tool calls a model asked for (any-agent), not text."""
_TOOL_CALLS_TEXT = r'^\s*\[\s*\{[^{}]*"function"\s*:\s*\{\s*"name"\s*:'
"""A reply whose text is the JSON of OpenAI tool calls (`[{"function": {"name": ...}, "id":
...}]`): JetBrains Koog writes the calls a model asked for as the message's content. It asks
for tools and says nothing, as a reply with `tool_calls` and no content does."""
_AI_SDK_CALLS = r'^\s*\[\s*\{\s*"toolCallId"\s*:'
"""A run's output that is the tool calls its last model call asked for (the Vercel AI SDK's
`ai.response.toolCalls`, which Langfuse keeps as the run's output): the run ended without an
answer."""
_AGENT_OPERATIONS = ("invoke_agent", "create_agent")
_ADK_MERGED = "(merged tools)"
"""The tool Google ADK names on the span that sums up a model's parallel tool calls (each call
has a span of its own beside it)."""
_TRACELOOP_KINDS = {"tool": "tool", "agent": "agent", "workflow": "chain"}
"""`traceloop.span.kind` as what a span is; `task` (any other decorated function) says nothing."""
_VERCEL_RUNS = ("ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject")
"""The Vercel AI SDK's operations that are a run (one or more model calls and their tools)."""
_OI_KINDS = {
    "LLM": "llm",
    "TOOL": "tool",
    "RETRIEVER": "retrieval",
    "AGENT": "agent",
    "CHAIN": "chain",
}
_DOCUMENT = r"^retrieval\.documents\.(\d+)\.document\.content$"


def wanted_key_filter(key: pl.Expr, config: OtelImportConfig) -> pl.Expr:
    """True for the attribute keys the mapping reads; readers drop every other attribute."""
    wanted = key.is_in([*ATTRIBUTE_KEYS, *config.attribute_keys()])
    for prefix in ATTRIBUTE_PREFIXES:
        wanted = wanted | key.str.starts_with(prefix)
    return wanted


def _kind(
    operation: pl.Expr,
    oi_kind: pl.Expr,
    tool_name: pl.Expr,
    adk_reply: pl.Expr,
    traceloop: tuple[pl.Expr, pl.Expr],
    vercel: pl.Expr,
    haystack: pl.Expr,
) -> pl.Expr:
    """gen_ai.operation.name first, then OpenLLMetry's request type and span kind (its 0.53
    and 0.54 name a model call's operation `llm_request`, beside `llm.request.type`), then
    the Vercel AI SDK's operation id, then any other operation, openinference.span.kind, ADK's
    model reply (its `call_llm` span names no operation), then a gen_ai.tool.name."""
    request_type, traceloop_kind = traceloop
    genai = (
        pl.when(operation.is_in(_LLM_OPERATIONS))
        .then(pl.lit("llm"))
        # Google ADK sums up a model's parallel calls in one more span, "(merged tools)"
        .when((operation == "execute_tool") & (tool_name != _ADK_MERGED).fill_null(True))
        .then(pl.lit("tool"))
        .when(operation == "execute_tool")
        .then(pl.lit("other"))
        .when(operation.is_in(_AGENT_OPERATIONS))
        .then(pl.lit("agent"))
    )
    openllmetry = (
        pl.when(request_type.is_in(["chat", "completion"]))
        .then(pl.lit("llm"))
        .otherwise(traceloop_kind.replace_strict(_TRACELOOP_KINDS, default=None))
    )
    vercel_kind = (
        pl.when(vercel.str.ends_with(".doGenerate") | vercel.str.ends_with(".doStream"))
        .then(pl.lit("llm"))
        .when(vercel == "ai.toolCall")
        .then(pl.lit("tool"))
        .when(vercel.is_in(_VERCEL_RUNS))
        .then(pl.lit("chain"))
    )
    openinference = oi_kind.str.to_uppercase().replace_strict(
        _OI_KINDS, default=pl.when(oi_kind.is_not_null()).then(pl.lit("other"))
    )
    adk = pl.when(adk_reply.str.strip_chars().is_in(["", "{}"]).not_()).then(pl.lit("llm"))
    return pl.coalesce(
        genai,
        openllmetry,
        vercel_kind,
        haystack,
        pl.when(operation.is_not_null()).then(pl.lit("other")),
        openinference,
        adk,
        pl.when(tool_name.is_not_null()).then(pl.lit("tool")),
        pl.lit("other"),
    )


def _exact_values(long: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """One column per key (the first value of that key per span row), in one pivot: a
    filtered aggregation per key cost twice as much with 35 keys."""
    picked = long.filter(pl.col("key").is_in(keys))
    found = picked.pivot(on="key", index="_row", values="value", aggregate_function="first")
    missing = [pl.lit(None, pl.String).alias(key) for key in keys if key not in found.columns]
    return found.with_columns(missing).select("_row", *keys)


def _documents(long: pl.DataFrame) -> pl.DataFrame:
    """Per retrieval span row: its documents' contents, joined by blank lines, in order."""
    return (
        long.with_columns(pl.col("key").str.extract(_DOCUMENT, 1).cast(pl.Int64).alias("_doc"))
        .drop_nulls("_doc")
        .sort("_row", "_doc")
        .group_by("_row", maintain_order=True)
        .agg(pl.col("value").str.join("\n\n").alias("documents"))
    )


def _first_model_calls(frame: pl.DataFrame) -> pl.Series:
    """True for the earliest model call under each parent span in this frame: the one whose
    input holds the objective of its agent run (an OTel trace may hold several runs, each its
    own trace when grouped by agent). Later calls repeat the history, so they are not decoded.
    A call that says what it was sent comes first: LlamaIndex's `_prepare_chat_with_tools`,
    which OpenInference types LLM, comes before the call and holds no messages."""
    model_call = pl.col("kind") == "llm"
    sent = pl.any_horizontal(
        pl.col(name).is_not_null()
        for name in (
            "gen_ai.input.messages",
            "flat_user_text",
            "gcp.vertex.agent.llm_request",
            "ai.prompt.messages",
        )
    )
    parent = ("trace_hex", "parent_hex", model_call)
    first = model_call & (pl.col("start_ns").rank("ordinal").over(*parent) == 1)
    if not frame.select((model_call & ~sent).any()).item():
        return frame.select(first).to_series()  # every call says what it was sent
    first_sent = pl.col("start_ns").rank("ordinal").over(*parent, sent) == 1
    any_sent = (model_call & sent).any().over(*parent)
    chosen = pl.when(any_sent).then(model_call & sent & first_sent).otherwise(first)
    return frame.select(chosen).to_series()


def _user_texts(frame: pl.DataFrame) -> pl.Series:
    """The first user message of each span that may hold the objective, else null: model
    calls first in their trace (GenAI JSON, then flattened messages, then input.value) and
    agent or chain spans (input.value)."""
    candidates = frame.with_columns(_first=_first_model_calls(frame)).filter(
        pl.col("_first") | pl.col("kind").is_in(["agent", "chain"])
    )
    decoded = json_message_texts(candidates["gen_ai.input.messages"], user=True)
    adk = gemini_texts(candidates["gcp.vertex.agent.llm_request"], user=True)
    vercel = pl.Series(dtype=pl.String).extend_constant(None, candidates.height)
    run = vercel
    if candidates["ai.prompt.messages"].null_count() < candidates.height:
        vercel = json_message_texts(candidates["ai.prompt.messages"], user=True)
    if candidates["ai.prompt"].null_count() < candidates.height:
        # a Vercel AI SDK run's `ai.prompt`: its prompt text, else its first user message
        prompt = candidates["ai.prompt"]
        listed = json_message_texts(prompt.str.json_path_match("$.messages"), user=True)
        asked = prompt.str.json_path_match("$.prompt")
        run = asked.zip_with(asked.is_not_null(), listed)
    texts = candidates.with_columns(
        decoded.alias("_decoded"),
        adk.alias("_adk"),
        vercel.alias("_vercel"),
        run.alias("_vercel_run"),
        _run_tasks(candidates).alias("_run_task"),
    ).select(
        "_row",
        pl.coalesce(
            "_decoded",
            "flat_user_text",
            "_adk",
            "_vercel",
            "_run_task",
            "input.value",
            "_vercel_run",
            "_hs_user",
            "_fw_task",
        ).alias("text"),
    )
    return _aligned(frame, texts)


_RUN_TASK = r'(?s)^\s*\{.*"task"\s*:\s*"'


def _run_tasks(candidates: pl.DataFrame) -> pl.Series:
    """An agent run's task where its input is the run's arguments as a JSON object with a
    `task` text (smolagents' `run(task, stream, reset, ...)`, as OpenInference records it):
    that text, not the arguments' JSON, nor a planning prompt that quotes it, is the task."""
    values = candidates["input.value"]
    maybe = ((candidates["kind"] == "agent") & values.str.contains(_RUN_TASK)).fill_null(False)
    texts = [
        _task(value) if flagged else None for value, flagged in zip(values, maybe, strict=True)
    ]
    return pl.Series("_run_task", texts, dtype=pl.String)


def _task(value: str) -> str | None:
    try:
        found = json.loads(value)
    except ValueError:
        return None
    task = found.get("task") if isinstance(found, dict) else None
    return task if isinstance(task, str) and task.strip() else None


def _json_text(values: pl.Series) -> pl.Series:
    """A value that is a JSON string as its text (a tool's result is JSON in the GenAI
    conventions and the Vercel AI SDK's: `"21 C"` is `21 C`, so a result `"Error: ..."` reads
    as the failure it reports); any other value as it is."""
    quoted = (values.str.starts_with('"') & values.str.ends_with('"')).fill_null(False)
    if not quoted.any():
        return values
    texts = [_string(v) if q else None for v, q in zip(values, quoted, strict=True)]
    return values.zip_with(~quoted, pl.Series(values.name, texts, dtype=pl.String))


def _string(value: str) -> str:
    """A JSON string's text; the value as it is where it is not one (`"a" and "b"`)."""
    try:
        text = json.loads(value)
    except ValueError:
        return value
    return text if isinstance(text, str) else value


def _output_texts(frame: pl.DataFrame) -> pl.Series:
    """A model call's output text; an agent or chain span's final answer."""
    model = frame.filter(pl.col("kind") == "llm")
    said = pl.when(~pl.col("gen_ai.output").str.contains(_TOOL_CALLS_OUTPUT)).then("gen_ai.output")
    generated = pl.when(pl.col("ai.response.text") != "").then("ai.response.text")
    # a call to a named model whose reply is given only as plain text (OpenInference's
    # LlamaIndex `complete`, a generation Langfuse's SDK recorded by hand: AutoGen's); JSON
    # there is the raw response, LlamaIndex's `assistant: ` a chat reply with no text, and a
    # span that names no model an app's own (Langfuse's SDK types those GENERATION too). Only
    # OpenInference's name is read: the GenAI conventions' spans say their reply otherwise,
    # and their `gen_ai.request.model` on every call would cost the reading of each
    output = pl.col("output.value")
    plain = pl.when(
        pl.col("llm.model_name").is_not_null()
        & (output.str.replace(r"^assistant:", "").str.strip_chars() != "")
        & ~output.str.strip_chars_start().str.contains(r"^[\[{]")
        & (output != "None")
    ).then(output)
    model_texts = model.with_columns(
        json_message_texts(model["gen_ai.output.messages"], user=False).alias("_decoded"),
        gemini_texts(model["gcp.vertex.agent.llm_response"], user=False).alias("_adk"),
    ).select(
        "_row",
        pl.coalesce(
            "_decoded", "flat_output_text", said, "_adk", generated, "_hs_text", plain
        ).alias("text"),
    )
    calls_only = pl.col("text").str.contains(_TOOL_CALLS_TEXT).fill_null(False)
    model_texts = model_texts.with_columns(pl.when(~calls_only).then("text").alias("text"))
    runs = frame.filter(pl.col("kind").is_in(["agent", "chain"]))
    # Google ADK's run gives the last event as its output (OpenInference's ADK instrumentation:
    # `{"content": {"parts": ..., "role": "model"}, ...}`, or the model's reply itself,
    # `{"model_version": ..., "content": ...}`): its text, but the parts marked as thought, is
    # the answer
    events = runs.select(
        pl.when(pl.col("output.value").str.contains(r'^\{"(content|model_version)"')).then(
            "output.value"
        )
    ).to_series()
    run_texts = runs.with_columns(
        json_message_texts(runs["gen_ai.output.messages"], user=False).alias("_decoded"),
        gemini_texts(events, user=False).alias("_event"),
    ).select(
        "_row",
        pl.coalesce(
            "final_result",
            "_decoded",
            "_event",
            generated,
            "_fw_output",
            # no answer: LlamaIndex's workflow writes its final event's repr, cut short, and
            # OpenInference writes Python's None as "None" (a smolagents run out of steps)
            pl.when(
                ~pl.col("output.value").str.contains(EVENT_REPR)
                & ~pl.col("output.value").str.contains(_AI_SDK_CALLS)
                & (pl.col("output.value") != "None")
            ).then("output.value"),
            "gen_ai.output",
            "_tl_output",
            "_hs_text",
        ).alias("text"),
    )
    return _aligned(frame, pl.concat([model_texts, run_texts]))


def _aligned(frame: pl.DataFrame, texts: pl.DataFrame) -> pl.Series:
    """`texts` (`_row`, `text`) as a column aligned with `frame`'s rows (null elsewhere)."""
    joined = frame.select("_row").join(texts, on="_row", how="left", maintain_order="left")
    return joined["text"]


def span_facts(raw: pl.DataFrame, config: OtelImportConfig) -> pl.DataFrame:
    """The `FACT_SCHEMA` row of every span of `raw` (`RAW_SPAN_SCHEMA`), in the same order.

    Only the earliest model call under each parent span in `raw` gets a `user_text`, so a
    reader that hands over a file in pieces keeps one copy of an agent run's first prompt per
    piece, not one per model call.
    """
    rows = raw.with_row_index("_row")
    long = (
        rows.select("_row", "attributes")
        .explode("attributes")
        .unnest("attributes")
        .drop_nulls("key")
    )
    keys = list(dict.fromkeys([*ATTRIBUTE_KEYS, *config.attribute_keys()]))
    exact = _exact_values(long, keys)
    flat = flat_message_texts(long).rename(
        {"output_text": "flat_output_text", "user_text": "flat_user_text"}
    )
    frame = (
        rows.drop("attributes")
        .join(exact, on="_row", how="left", maintain_order="left")
        .join(flat, on="_row", how="left", maintain_order="left")
        .join(_documents(long), on="_row", how="left", maintain_order="left")
        .pipe(pydantic_ai_spans)
        .pipe(beeai_events)
        .with_columns(
            _kind(
                pl.col("gen_ai.operation.name"),
                pl.col("openinference.span.kind"),
                pl.col("gen_ai.tool.name"),
                pl.col("gcp.vertex.agent.llm_response"),
                (pl.col("llm.request.type"), pl.col("traceloop.span.kind")),
                pl.col("ai.operationId"),
                haystack_kind(),
            ).alias("kind")
        )
    )
    return _facts(framework_texts(frame), config)


def _tool_columns(config: OtelImportConfig) -> dict[str, pl.Expr]:
    """A tool call's tool, arguments and result (`FACT_SCHEMA`), by each convention's names;
    a retrieval's tool is `retrieval_tool`, its result its documents."""
    retrieval = pl.col("kind") == "retrieval"
    return dict(
        tool_name=pl.when(retrieval)
        .then(pl.lit(config.retrieval_tool))
        .otherwise(
            pl.coalesce(
                "gen_ai.tool.name",
                "ai.toolCall.name",
                "tool.name",
                pl.when(pl.col("traceloop.span.kind") == "tool").then("traceloop.entity.name"),
                "haystack.tool.name",
            )
        ),
        # OpenInference's tool.parameters is the tool's parameter schema (smolagents,
        # LlamaIndex); the call's own arguments are the TOOL span's input.value
        # OpenLLMetry's LangChain tools wrap the arguments and result the same way in
        # traceloop.entity.* and (0.55 on) gen_ai.tool.call.*: unwrapped first
        tool_input=pl.coalesce(
            "_tl_input",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.args",
            PYDANTIC_AI_ARGUMENTS,
            "gcp.vertex.agent.tool_call_args",
            "ai.toolCall.args",
            "input.value",
            "tool.parameters",
            "haystack.agent.step.tool.input",
        ),
        tool_output=pl.when(retrieval)
        .then(pl.coalesce("documents", "output.value"))
        .otherwise(
            pl.coalesce(
                "_tl_output",
                "gen_ai.tool.call.result",
                PYDANTIC_AI_RESULT,
                "ai.toolCall.result",
                "_fw_output",
                "output.value",
                "gen_ai.output",
                "gcp.vertex.agent.tool_response",
                "haystack.agent.step.tool.output",
            )
        ),
    )


def _facts(frame: pl.DataFrame, config: OtelImportConfig) -> pl.DataFrame:
    def attribute(key: str | None) -> pl.Expr:
        return pl.lit(None, dtype=pl.String) if key is None else pl.col(key)

    return (
        frame.with_columns(
            _json_text(frame["ai.toolCall.result"]),
            _json_text(frame["gen_ai.tool.call.result"]),
            text=_output_texts(frame),
            user_text=_user_texts(frame),
        )
        .select(
            *(
                name
                for name in RAW_SPAN_SCHEMA
                if name not in ("attributes", "status_message", "exception_message")
            ),
            error=pl.coalesce(
                pl.when(pl.col("status_message") != "").then(pl.col("status_message")),
                "exception_message",
            ),
            kind="kind",
            # pydantic-ai's run span named its agent `agent_name` alone before 0.4
            agent_name=pl.coalesce("gen_ai.agent.name", "agent.name", AGENT_NAME),
            # OpenInference names an agent only in its AGENT span's name; the OpenAI Agents
            # SDK's whole run is an AGENT span named after its workflow, by default this.
            agent_span=pl.when(
                (pl.col("openinference.span.kind").str.to_uppercase() == "AGENT")
                & (pl.col("name") != "Agent workflow")
            ).then("name"),
            # The SDKs' default when no service name was set: it names no agent.
            service_name=pl.when(~pl.col("service.name").str.starts_with("unknown_service")).then(
                "service.name"
            ),
            service_version="service.version",
            # OpenInference's tag.tags; Langfuse's own SDKs set langfuse.trace.tags
            tags=pl.coalesce("tag.tags", "langfuse.trace.tags"),
            **_tool_columns(config),
            text="text",
            user_text="user_text",
            domain=attribute(config.task_domain_attribute),
            success_value=attribute(config.success_attribute),
            confidence_value=attribute(config.confidence_attribute),
        )
        .cast(pl.Schema(FACT_SCHEMA))
    )  # type: ignore[arg-type]
