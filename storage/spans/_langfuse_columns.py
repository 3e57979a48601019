"""The span-row columns of Langfuse observations (`storage.spans._langfuse_read.observations`), as
`storage.spans.langfuse._row` and `storage.spans.phoenix.phoenix_rows` make them, for
`storage.spans._langfuse_lines`.

Ids, times, kinds, status and the message lists are worked out column-wise. Python is left
what only it can say: ids that are not OTel ids (hashed), inputs and outputs that need
`message_list` or `text_of` (LangChain's messages, content parts, OpenAI's request and
completion, text holding JSON, a tool's object).
"""

from __future__ import annotations

import hashlib
from typing import Any

import polars as pl

from storage.spans._langfuse_read import TOP
from storage.spans._messages import decoded, message_text, text_of
from storage.spans.langfuse import KINDS, MODEL_KEY, called_tools

__all__ = ["field_rows", "span_columns", "tools_by_line"]

_PLAIN_START = r"^([!#-Z\x5c-z|-~]|\pL)"
"""Printable ASCII but a bracket or a quote, or a letter: text `decoded` leaves as it is."""

_ROLES = pl.List(pl.Struct({"role": pl.String}))

_SINGLE = pl.Struct({"role": pl.String, "messages": pl.String, "choices": pl.String})

_LIST_CONTENT = r'"content"\s*:\s*\[|"role"\s*:\s*[^"\s]|"role"\s*:\s*""'
"""A message list `message_list` would rewrite: content given as parts, a role that is not
non-empty text (also where such keys sit deeper: such a list is left to Python)."""


def _sha(values: pl.Series, digits: int) -> dict[str, str]:
    return {
        text: hashlib.sha256(text.encode()).hexdigest()[:digits]
        for text in values.drop_nulls().unique().to_list()
    }


def _ids(spans: pl.DataFrame) -> pl.DataFrame:
    """`storage.spans.langfuse._id` of each id: an OTel id (32 or 16 hex digits, a trace's
    dashes dropped, 0x or not) as lowercase hex, other text as its SHA-256's first digits."""
    tid = pl.when(pl.col("traceId").fill_null("") != "").then("traceId").otherwise("trace_id")
    spans = spans.with_columns(_tid=tid)
    columns = []
    for source, target, digits, dashes in (
        ("_tid", "trace_hex", 32, True),
        ("id", "span_hex", 16, False),
        ("parentObservationId", "parent_hex", 16, False),
    ):
        raw = pl.col(source)
        lower = (raw.str.replace_all("-", "", literal=True) if dashes else raw).str.to_lowercase()
        is_hex = lower.str.contains(f"^(0x)?[0-9a-f]{{{digits}}}$")
        hashed = _sha(spans.filter(~is_hex.fill_null(True))[source], digits)
        columns.append(
            pl.when(raw.fill_null("") == "")
            .then(None)
            .when(is_hex)
            .then(lower.str.slice(-digits))
            .otherwise(raw.replace_strict(hashed, default=None, return_dtype=pl.String))
            .alias(target)
        )
    return spans.with_columns(columns).drop("_tid")


def _nanoseconds(column: str) -> pl.Expr:
    """An ISO-8601 time (`_TIME`; no offset is UTC) as Unix nanoseconds, to the microsecond."""
    text = pl.col(column).str.replace(" ", "T", literal=True).str.replace("Z$", "+00:00")
    text = pl.when(text.str.contains(r"[+-]\d\d:\d\d$")).then(text).otherwise(text + "+00:00")
    stamp = text.str.to_datetime(
        "%Y-%m-%dT%H:%M:%S%.f%:z", time_unit="us", time_zone="UTC", strict=False
    )
    return pl.when(pl.col(column).fill_null("") != "").then(stamp.dt.epoch("us") * 1000)


def _roles(column: str, spans: pl.DataFrame) -> pl.DataFrame:
    """`sid` and the roles of the message list each span's column holds, for the spans where
    it is one `message_list` keeps as it is."""
    text = pl.col(column)
    candidates = spans.filter(
        text.str.starts_with("[{") & ~text.str.contains(_LIST_CONTENT)
    ).select("sid", column)
    empty = pl.DataFrame(schema={"sid": pl.Int64, "roles": pl.List(pl.String)})
    if candidates.is_empty():
        return empty
    try:
        found = candidates.select("sid", roles=text.str.json_decode(_ROLES))
    except pl.exceptions.PolarsError:
        return empty
    roles = pl.col("roles").list.eval(pl.element().struct.field("role"))
    return found.select("sid", roles=roles).filter(
        pl.col("roles").list.eval(pl.element().is_not_null()).list.all()
    )


def _answers(spans: pl.DataFrame) -> pl.Series:
    """The `sid` of the spans whose output is one assistant message `message_list` keeps."""
    output = pl.col("output")
    single = spans.filter(output.str.starts_with("{") & ~output.str.contains(_LIST_CONTENT))
    try:
        fields = single.select("sid", message=output.str.json_decode(_SINGLE)).unnest("message")
    except pl.exceptions.PolarsError:
        return pl.Series("sid", [], dtype=pl.Int64)
    return fields.filter(
        (pl.col("role") == "assistant") & pl.col("messages").is_null() & pl.col("choices").is_null()
    )["sid"]


def _message_columns(spans: pl.DataFrame) -> pl.DataFrame:
    """`in_messages`, `out_messages`: message attributes that are the text the span holds;
    `in_plain`, `out_plain`: a text `decoded` leaves as it is; `in_none`, `out_none`."""
    asked = _roles("input", spans).rename({"roles": "_asked"})
    said = _roles("output", spans).rename({"roles": "_said"})
    answers = _answers(spans)
    plain = {
        name: pl.col(name).is_not_null()
        & ((pl.col(name) == "") | pl.col(name).str.contains(_PLAIN_START))
        for name in ("input", "output")
    }
    return (
        spans.join(asked, on="sid", how="left", maintain_order="left")
        .join(said, on="sid", how="left", maintain_order="left")
        .with_columns(
            in_none=pl.col("input").is_null(),
            out_none=pl.col("output").is_null(),
            in_plain=plain["input"],
            out_plain=plain["output"],
            in_messages=pl.when(pl.col("_asked").list.len() > 0).then("input"),
            out_messages=pl.when(
                pl.col("_said").list.len() == 1, pl.col("_said").list.first() == "assistant"
            )
            .then("output")
            .when(pl.col("sid").is_in(answers.implode()))
            .then(pl.lit("[") + pl.col("output") + pl.lit("]")),
        )
        .drop("_asked", "_said")
    )


def span_columns(spans: pl.DataFrame) -> pl.DataFrame:
    """The observations (`storage.spans._langfuse_read.observations`) with the span row's columns
    and what their input and output give (`_message_columns`)."""
    upper = pl.col("type").fill_null("").str.to_uppercase()
    failed = pl.col("level").fill_null("").str.to_uppercase() == "ERROR"
    return _message_columns(_ids(spans)).with_columns(
        upper_type=upper,
        kind=upper.replace_strict(KINDS, default=None, return_dtype=pl.String),
        start_ns=_nanoseconds("startTime"),
        end_ns=pl.when(pl.col("endTime").fill_null("") != "")
        .then(_nanoseconds("endTime"))
        .otherwise(_nanoseconds("startTime")),
        status=pl.when(failed).then(pl.lit("ERROR")).otherwise(pl.lit("UNSET")),
        status_message=pl.when(failed & (pl.col("statusMessage").fill_null("") != "")).then(
            "statusMessage"
        ),
    )


def _side_fields(given: Any, tool: bool, which: str) -> list[tuple[str, str]]:
    """One side (input or output) of an observation as `storage.spans.langfuse._row` gives it."""
    messages = None if tool else message_text(given, which)
    if messages is not None:
        return [(f"gen_ai.{which}.messages", messages)]
    text = text_of(given)
    return [] if text is None else [(f"{which}.value", text)]


def tools_by_line(spans: pl.DataFrame) -> dict[int, set[str]]:
    """The tool names each line's model calls ask for, for the lines with a SPAN that has a
    name (`storage.spans.langfuse`: such a span named after a called tool is that tool's call)."""
    lines = spans.filter((pl.col("upper_type") == "SPAN") & pl.col("name").is_not_null())
    wanted = set(lines["number"].to_list())
    found: dict[int, set[str]] = {number: set() for number in wanted}
    calls = spans.filter(
        pl.col("number").is_in(list(wanted)) & (pl.col("upper_type") == "GENERATION")
    )
    for number, output in calls.select("number", "output").iter_rows():
        found[number] |= called_tools(decoded(output))
    return found


def _side(which: str, tool: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """The key and text one side (input, output) gives where Polars can tell (`_row`): none
    for nothing, a plain text as it is, a message list `message_list` keeps as it is; a null
    key where Python must decode it (a tool's object: `json.dumps` writes its text)."""
    short = which[:-3] if which.endswith("put") else which
    none, plain = pl.col(f"{short}_none"), pl.col(f"{short}_plain")
    messages = pl.col(f"{short}_messages")
    key = (
        pl.when(none)
        .then(None)
        .when(plain)
        .then(pl.lit(f"{which}.value"))
        .when(~tool & messages.is_not_null())
        .then(pl.lit(f"gen_ai.{which}.messages"))
    )
    value = pl.when(~tool & ~plain & messages.is_not_null()).then(messages).otherwise(which)
    return key, value


def field_rows(spans: pl.DataFrame, tools: dict[int, set[str]]) -> tuple[pl.Series, pl.DataFrame]:
    """Which spans are tool calls, and the `TOP` rows (priority 2) of what their input and
    output say, in `_row`'s order: tool name, message lists, then texts."""
    named = [
        sid
        for sid, number, name in spans.filter(pl.col("upper_type") == "SPAN")
        .select("sid", "number", "name")
        .iter_rows()
        if name in tools.get(number, ())
    ]
    tool = (pl.col("upper_type") == "TOOL") | pl.col("sid").is_in(
        pl.Series(named, dtype=pl.Int64).implode()
    )
    given, got = _side("input", tool), _side("output", tool)
    frame = spans.with_columns(
        _tool=tool, _in_key=given[0], _in=given[1], _out_key=got[0], _out=got[1]
    )
    order = {
        "tool.name": 0,
        "gen_ai.input.messages": 1,
        "gen_ai.output.messages": 2,
        "input.value": 3,
        "output.value": 4,
        MODEL_KEY: 5,
    }
    rows = [
        frame.filter(pl.col("_tool") & pl.col("name").is_not_null()).select(
            "sid", top=pl.lit("tool.name"), value="name"
        )
    ]
    for key, value in (("_in_key", "_in"), ("_out_key", "_out")):
        rows.append(frame.filter(pl.col(key).is_not_null()).select("sid", top=key, value=value))
    python: list[tuple[Any, ...]] = []
    for which, none_key, key in (
        ("input", "in_none", "_in_key"),
        ("output", "out_none", "_out_key"),
    ):
        left = frame.filter(~pl.col(none_key) & pl.col(key).is_null())
        for sid, is_tool, text in left.select("sid", "_tool", which).iter_rows():
            python.extend(
                (sid, key, value) for key, value in _side_fields(decoded(text), is_tool, which)
            )
    rows.append(
        pl.DataFrame(
            python, schema={"sid": pl.Int64, "top": pl.String, "value": pl.String}, orient="row"
        )
    )
    named_model = (pl.col("upper_type") == "GENERATION") & (pl.col("model").fill_null("") != "")
    rows.append(frame.filter(named_model).select("sid", top=pl.lit(MODEL_KEY), value="model"))
    found = pl.concat(rows).with_columns(
        priority=pl.lit(2, pl.Int32),
        ord=pl.col("top").replace_strict(order, return_dtype=pl.Int64),
        json=pl.lit(None, pl.String),
    )
    return frame["_tool"], found.select(list(TOP))
