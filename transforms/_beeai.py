"""BeeAI's runs as its first OpenInference instrumentation traced them: one span per event.

openinference-instrumentation-beeai before its processors (2025; checked on BeeAI 0.1.33's
ReAct agent, which Langfuse's repository downloaded from Langfuse Cloud, tests/data/langfuse)
made a span of each event the framework emitted, named after the event's path and a counter
(`agent.react.update-13`, `tool.search.wikipedia.start-12`) with the path in a `target`
attribute, under `iteration-N` spans. A call is then several spans: a tool's `start`,
`finish` and `success`; a model's `start` (its messages), and at the end a `success` whose
output messages are the streamed tokens, one a message. What the agent did is in the ReAct
agent's `update` events, one for each field it filled (`thought`, then `tool.name`,
`tool.parameters` and the tool's result as `output.value`, or the final answer as
`output.value`).

So here, for those spans: an update holding a tool's name and result is that tool's call; an
update holding only a thought is a model step with that thought as its text, one holding the
final answer a model step with the answer; a model's `start` stays a model call (the
messages it was sent; it holds no reply, so it is no step); every other event span is none
(a tool's and a model's events repeat what the updates say). A trace with no update (an agent other than
ReAct) keeps its tools' `success` and `error` events as its calls. The run's output, which
the instrumentation writes as Python's `repr` of BeeAI's message (`{'role': 'assistant',
'text': ...}`), is read as its text.
"""

from __future__ import annotations

import ast

import polars as pl

__all__ = ["BEEAI_KEYS", "beeai_events"]

BEEAI_KEYS = ("target", "thought", "beeai.version")
"""BeeAI's instrumentation's own attributes: an event span's path, a ReAct update's thought,
the framework's version on the run's span."""

_KIND = "openinference.span.kind"
_OUTPUT = "output.value"
_MESSAGES = "gen_ai.output.messages"


def _message_text(value: str | None) -> str | None:
    """The text of BeeAI's message as Python wrote it (`{'role': ..., 'text': ...}`); None for
    anything else."""
    if not value or not value.startswith("{'"):
        return None
    try:
        found = ast.literal_eval(value)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    text = found.get("text") if isinstance(found, dict) else None
    return text if isinstance(text, str) else None


def _said(text: pl.Expr) -> pl.Expr:
    """`text` as the output messages of a model step: one assistant message (null for none)."""
    message = pl.struct(role=pl.lit("assistant"), content=text).struct.json_encode()
    return pl.when(text.is_not_null()).then(pl.concat_str(pl.lit("["), message, pl.lit("]")))


def beeai_events(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` (one row a span, its attributes as columns) with BeeAI's event spans read as
    the module says: their `openinference.span.kind`, `gen_ai.output.messages` and
    `output.value` rewritten; every other span as it is."""
    target = pl.col("target")
    event = target.is_not_null() & pl.col("name").str.starts_with(target + pl.lit("-"))
    if not frame.select(event.any() | pl.col("beeai.version").is_not_null().any()).item():
        return frame
    update = event & target.str.contains(r"^agent\.[\w.]+\.update$")
    tool_named = pl.col("tool.name").is_not_null()
    answered = pl.col(_OUTPUT).is_not_null()
    thought = pl.col("thought").str.strip_chars().fill_null("") != ""
    traced = update.any().over("trace_hex")
    call_event = target.str.contains(r"^tool\.[\w.]+\.(success|error)$")
    # a model's `start` holds the messages it was sent (no reply: no step), which give the
    # task where the run's own span is not at hand (a trace cut over two export windows)
    model_start = pl.col("name").str.contains(r"^backend\.[\w.]+\.start-\d+$")
    # a model's event whose attributes the span's limit cut off (its 128 streamed tokens
    # leave no room for the `target`): known by its name alone
    model_event = pl.col("name").str.contains(r"^backend\.[\w.]+-\d+$")
    kind = (
        pl.when(update & tool_named & answered)
        .then(pl.lit("TOOL"))
        .when(update & ~tool_named & (answered | thought))
        .then(pl.lit("LLM"))
        .when(
            ~model_start
            & ((event & (~call_event | traced) & (target != "groupId")) | (model_event & traced))
        )
        .then(pl.lit("UNKNOWN"))
        .otherwise(pl.col(_KIND))
    )
    step_text = pl.when(update & ~tool_named).then(
        pl.when(answered).then(pl.col(_OUTPUT)).when(thought).then(pl.col("thought"))
    )
    runs = frame["beeai.version"].is_not_null()
    texts = [
        _message_text(value) if run else None
        for value, run in zip(frame[_OUTPUT], runs, strict=True)
    ]
    return frame.with_columns(
        kind.alias(_KIND),
        pl.coalesce(_said(step_text), pl.col(_MESSAGES)).alias(_MESSAGES),
        pl.coalesce(pl.Series(texts, dtype=pl.String), pl.col(_OUTPUT)).alias(_OUTPUT),
    )
