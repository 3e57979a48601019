"""Message texts out of span attributes: the model's output text and the first user message.

Two conventions record messages. The OpenTelemetry GenAI conventions put them in one attribute
as JSON (`gen_ai.input.messages`, `gen_ai.output.messages`: a list of messages, each a role and
a list of parts); OpenInference (and the older `gen_ai.prompt.N` / `gen_ai.completion.N`
layout) flatten them into one attribute per field (`llm.output_messages.0.message.content`).
Google ADK's own tracing keeps a model call's whole request and reply instead, as Gemini's API
shapes them (`gcp.vertex.agent.llm_request`: `contents`, a list of messages each a role and a
list of `parts`; `gcp.vertex.agent.llm_response`: one `content`). Everything here works on
Polars frames, one row per span; nothing reads or writes.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

__all__ = ["FLAT_MESSAGE_PREFIXES", "flat_message_texts", "gemini_texts", "json_message_texts"]

FLAT_MESSAGE_PREFIXES = (
    "llm.input_messages.",
    "llm.output_messages.",
    "gen_ai.prompt.",
    "gen_ai.completion.",
)
"""Attribute key prefixes of messages flattened one field per attribute."""

_FLAT = (
    r"^(?P<family>llm\.input_messages|llm\.output_messages|gen_ai\.prompt|gen_ai\.completion)"
    r"\.(?P<index>\d+)\.(?P<field>.+)$"
)
_INPUT_FAMILIES = ("llm.input_messages", "gen_ai.prompt")
_ROLE_FIELDS = ("message.role", "role")
_CONTENT_FIELDS = ("message.content", "content")
_PART_TEXT = r"^message\.contents\.(\d+)\.message_content\.text$"
_CONTENT_PARTS = r'"content"\s*:\s*\['
"""A message whose `content` is a list of parts rather than text."""
_MESSAGES = pl.List(
    pl.Struct(
        {
            "role": pl.String,
            "content": pl.String,
            "parts": pl.List(pl.Struct({"type": pl.String, "content": pl.String})),
        }
    )
)


def flat_message_texts(long: pl.DataFrame) -> pl.DataFrame:
    """Per span row: `output_text` (its output messages' texts joined by newlines) and
    `user_text` (the text of its first input message with role user), from flattened keys.

    Args:
        long: one row per attribute: `_row` (the span), `key`, `value`.
    """
    parts = (
        long.filter(
            pl.col("key").str.contains(
                r"^(llm\.(in|out)put_messages|gen_ai\.(prompt|completion))\."
            )
        )
        .with_columns(pl.col("key").str.extract_groups(_FLAT).alias("_k"))
        .unnest("_k")
        .drop_nulls("family")
        .with_columns(
            pl.col("index").cast(pl.Int64),
            pl.col("field").str.extract(_PART_TEXT, 1).cast(pl.Int64).alias("part"),
        )
    )
    texts = (
        parts.filter(pl.col("field").is_in(_CONTENT_FIELDS) | pl.col("part").is_not_null())
        .sort("_row", "family", "index", pl.col("part").fill_null(-1))
        .group_by("_row", "family", "index", maintain_order=True)
        .agg(pl.col("value").str.join("\n").alias("text"))
    )
    roles = parts.filter(pl.col("field").is_in(_ROLE_FIELDS)).select(
        "_row", "family", "index", pl.col("value").alias("role")
    )
    messages = texts.join(roles, on=["_row", "family", "index"], how="left")
    output = (
        messages.filter(~pl.col("family").is_in(_INPUT_FAMILIES) & (pl.col("text") != ""))
        .group_by("_row", maintain_order=True)
        .agg(pl.col("text").str.join("\n").alias("output_text"))
    )
    user = (
        messages.filter(pl.col("family").is_in(_INPUT_FAMILIES) & (pl.col("role") == "user"))
        .sort("_row", "index")
        .group_by("_row", maintain_order=True)
        .agg(pl.col("text").first().alias("user_text"))
    )
    return output.join(user, on="_row", how="full", coalesce=True)


def _python_texts(value: str | None, user: bool) -> str | None:
    """The same extraction as `_decoded_texts`, for a value the vectorized decoder refused."""
    if value is None:
        return None
    try:
        messages: Any = json.loads(value)
    except (ValueError, RecursionError):
        return None
    if not isinstance(messages, list):
        return None
    texts = []
    for message in messages:
        if not isinstance(message, dict) or (user and message.get("role") != "user"):
            continue
        text = _message_text(message)
        if user:
            return text
        if text:
            texts.append(text)
    return None if user else ("\n".join(texts) if texts else None)


def _message_text(message: dict[str, Any]) -> str:
    """A message's text: its `content` when that is text, and the text parts of its `parts`
    (GenAI's, the text in `content`) or of a `content` list (OpenAI's and the Vercel AI SDK's,
    the text in `text`)."""
    content = message.get("content")
    pieces = [content] if isinstance(content, str) else []
    parts = [*(message.get("parts") or []), *(content if isinstance(content, list) else [])]
    for part in parts:
        if isinstance(part, dict) and part.get("type") == "text":
            text = part.get("content", part.get("text"))
            if isinstance(text, str):
                pieces.append(text)
    return "\n".join(pieces)


def _decoded_texts(values: pl.Series, user: bool) -> pl.Series:
    """Output text (all messages) or first user message text of GenAI JSON message lists,
    each message's text worked out inside its list (no explode and regroup)."""
    message = pl.element()
    pieces = message.struct.field("parts").list.eval(
        pl.element().filter(pl.element().struct.field("type") == "text").struct.field("content")
    )
    piece = pieces.list.join("\n")
    text = pl.concat_str(
        message.struct.field("content"),
        pl.when(piece != "").then(piece),
        separator="\n",
        ignore_nulls=True,
    )
    messages = values.str.json_decode(_MESSAGES)
    if user:
        is_user = message.struct.field("role") == "user"
        return messages.list.eval(text.filter(is_user)).list.first()
    joined = messages.list.eval(text.filter(text != "")).list.join("\n")
    return joined.to_frame("t").select(pl.when(pl.col("t") != "").then(pl.col("t")))["t"]


def json_message_texts(values: pl.Series, user: bool) -> pl.Series:
    """Per value of a GenAI messages attribute (JSON text): the output text (every message's
    text parts, joined by newlines) or, with `user`, the text of the first user message.

    Values that are not a JSON list of messages give null. The list is decoded by Polars in one
    pass; when one value breaks the expected shape, the values are decoded one by one instead.
    """
    parted = values.str.contains(_CONTENT_PARTS).fill_null(False)
    if parted.any():
        # content given as a list of parts (OpenAI's `[{"type": "text", "text": ...}]`, the
        # Vercel AI SDK's): decoded in Python, where Polars would read the content as nothing
        texts = [_python_texts(v, user) if p else None for v, p in zip(values, parted, strict=True)]
        rest = json_message_texts(values.set(parted, None), user)
        return rest.zip_with(~parted, pl.Series(values.name, texts, dtype=pl.String))
    try:
        return _decoded_texts(values, user).rename(values.name)
    except pl.exceptions.PolarsError:
        texts = [_python_texts(value, user) for value in values.to_list()]
        return pl.Series(values.name, texts, dtype=pl.String)


_ADK_CONTEXT = "For context:"
"""The part Google ADK puts before what other agents said and did, when it hands a run on to
another agent (its `contents` flow: each such event as "[agent] said: ..." or "[agent] called
tool ..."): the task is the text before it."""


def _gemini_text(content: Any, task: bool = False) -> str | None:
    """The text parts of one Gemini content (`{"role", "parts": [{"text"}, ...]}`), joined by
    newlines; a part marked `thought` (the model's reasoning) is not the text. With `task`
    (a user's content, read for the run's task), the parts from ADK's `For context:` on are
    what other agents did, not the task."""
    if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
        return None
    pieces = []
    for part in content["parts"]:
        if not isinstance(part, dict) or not isinstance(part.get("text"), str):
            continue
        if task and part["text"].strip() == _ADK_CONTEXT:
            break
        if not part.get("thought"):
            pieces.append(part["text"])
    return "\n".join(pieces) if pieces else None


def _gemini(value: str | None, user: bool) -> str | None:
    try:
        found: Any = json.loads(value) if value else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(found, dict):
        return None
    if not user:
        return _gemini_text(found.get("content"))
    contents = found.get("contents")
    for content in contents if isinstance(contents, list) else []:
        if isinstance(content, dict) and content.get("role") == "user":
            text = _gemini_text(content, task=True)
            if text is not None:
                return text  # else only what other agents did: the task comes later
    return None


def gemini_texts(values: pl.Series, user: bool) -> pl.Series:
    """Per value of ADK's `llm_request` (with `user`: the text of its first user message) or
    `llm_response` (the reply's text), JSON text as Gemini's API shapes it; null where the
    value is not one or holds no text (ADK writes `{}` on a tool's span)."""
    texts = [_gemini(value, user) for value in values.to_list()]
    return pl.Series(values.name, texts, dtype=pl.String)
