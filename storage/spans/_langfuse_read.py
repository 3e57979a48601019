"""Langfuse trace lines to one row an observation, read by Polars, for `storage.spans._langfuse_lines`.

Polars reads a block of lines against the public API's trace schema (`_LINE`), each
observation's input, output and attributes kept as JSON text. Polars writes a nested value
back as the text `json.dumps` would, except in what `_GUARDS` looks for (a float, a control
character, a lone surrogate, a long integer), and it reads a number or boolean where text
belongs as that text: a line where any of these could happen is not taken. Neither is a line
nested deeper than the per-line reader allows, one of a block Polars refuses (a malformed line,
another kind of row, a type the schema does not hold), nor one whose ids, kinds, levels or
times the columns would read otherwise than `storage.spans.langfuse` (`_covered`).
"""

from __future__ import annotations

import io
import re

import numpy as np
import polars as pl

from storage.inputs.json_values import MAX_JSON_DEPTH

__all__ = ["held_back", "observations"]

_TEXT_FIELDS = (
    "id",
    "traceId",
    "parentObservationId",
    "type",
    "name",
    "startTime",
    "endTime",
    "level",
    "statusMessage",
)

_OBSERVATION = pl.Struct(
    {
        **dict.fromkeys(_TEXT_FIELDS, pl.String),
        "input": pl.String,
        "output": pl.String,
        "metadata": pl.String,
    }
)

_TRACE: dict[str, pl.DataType] = {
    "id": pl.String(),
    "input": pl.String(),
    "output": pl.String(),
    "version": pl.String(),
    "release": pl.String(),
    "tags": pl.List(pl.String()),
}

_LINE: dict[str, pl.DataType] = {
    **_TRACE,
    "timestamp": pl.String(),
    "trace": pl.Struct(_TRACE),
    "observations": pl.List(_OBSERVATION),
}

_TEXT_KEYS = "|".join((*_TEXT_FIELDS, "timestamp", "version", "release"))

_NUMBER = r"[:,\[]\s*-?"
_END = r"\s*[,\]}]"
_GUARDS = "|".join(
    [
        rf"{_NUMBER}\d+(\.\d+)?[eE][-+]?\d+{_END}",  # 1e-7: Polars writes 0.0000001
        rf"{_NUMBER}\d+\.0+{_END}|[:,\[]\s*-0{_END}",  # 1.0: Polars writes 1; -0
        rf"{_NUMBER}0\.0000",  # 0.00001: Python writes 1e-05
        rf"{_NUMBER}\d{{14,}}\.",  # 950619407107577.2: Polars writes ...577.3
        r"\d{19}",  # past 64 bits
        r"\\[\\tbf]|\\u00[01][0-9a-fA-F]",  # Polars writes \\, \t, controls raw
        r"\\u[dD][89a-fA-F]",  # a lone surrogate
        rf'"({_TEXT_KEYS})"\s*:\s*[^"\sn]',  # a number where text belongs
        r'"trace"\s*:\s*"|\\?"(attributes|resourceAttributes)\\?"\s*:\s*\\?"',
    ]
)
"""What Polars would read otherwise than `json.loads` then `json.dumps` (checked on 8,000
random floats): floats Python writes otherwise (an exponent, an integral float, under 1e-4,
15 digits before the point), an integer past 64 bits, an escaped backslash, tab or control
character (Polars writes them raw), a lone surrogate, a number or boolean in a field read as
text, and text where an object belongs. Matching inside a string only leaves a line to the
per-line reader."""

_STRUCTURED = r'"(input|output)"\s*:\s*"(\s|\\|\[|\{)'
"""An input or output that is text holding JSON (or starting with a space or an escape):
there Polars' text is not `json.dumps`'s, so a line without one is `structured`."""

_TIME = r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d{1,6})?(Z|[+-]\d\d:\d\d)?$"

_PRINTABLE = r"^[!-~]([ -~]*[!-~])?$"
"""Text Python's `strip()` leaves as it is and whose case Polars changes as Python does."""

_NEWLINE, _QUOTE, _BACKSLASH, _OPEN, _CLOSE = 10, 34, 92, 1, 2
_MARKS = bytes(
    {10: _NEWLINE, 34: _QUOTE, 91: _OPEN, 123: _OPEN, 93: _CLOSE, 125: _CLOSE}.get(b, 0)
    for b in range(256)
)
"""`bytes.translate` table: newlines, quotes and brackets kept (brackets as 1 or 2), every
other byte 0."""


def _backslashes_before(data: bytes, at: int) -> int:
    count = 0
    while at > count and data[at - count - 1] == _BACKSLASH:
        count += 1
    return count


def _too_deep(lines: list[str]) -> list[bool]:
    """Per line (each valid JSON): does it nest arrays and objects deeper than
    MAX_JSON_DEPTH? Column-wise over the quotes and brackets of all lines at once, a bracket
    inside a string not counted (a string's quotes are those not escaped by an odd run of
    backslashes)."""
    data = ("\n".join(lines) + "\n").encode()
    marks = np.frombuffer(data.translate(_MARKS), np.uint8)
    at = np.flatnonzero(marks)
    kind = marks[at]
    quote = kind == _QUOTE
    suspect = at[quote] - 1
    escaped = np.zeros(quote.sum(), dtype=bool)
    maybe = np.flatnonzero(np.frombuffer(data, np.uint8)[np.maximum(suspect, 0)] == _BACKSLASH)
    for index in maybe.tolist():
        escaped[index] = _backslashes_before(data, int(suspect[index]) + 1) % 2 == 1
    opens = np.zeros(kind.size, dtype=np.int32)
    opens[np.flatnonzero(quote)[~escaped]] = 1
    outside = (np.cumsum(opens) & 1) == 0
    step = np.where(kind == _OPEN, 1, np.where(kind == _CLOSE, -1, 0)).astype(np.int32)
    depth = np.cumsum(step * outside, dtype=np.int32)
    ends = np.flatnonzero(kind == _NEWLINE)
    starts = np.concatenate(([0], ends[:-1] + 1))
    return (np.maximum.reduceat(depth, starts) > MAX_JSON_DEPTH).tolist()


def held_back(line: str) -> bool:
    """The line trips a guard (`_GUARDS`), so this reading leaves it to the per-line reader."""
    return _GUARD.search(line) is not None


_GUARD = re.compile(_GUARDS)


def _read(lines: list[tuple[int, str]]) -> pl.DataFrame | None:
    """The lines as rows of `_LINE` with their `number`; None when Polars refuses the block."""
    data = "\n".join(text for _, text in lines).encode()
    try:
        frame = pl.read_ndjson(io.BytesIO(data), schema=_LINE)
    except (pl.exceptions.PolarsError, ValueError):
        return None
    if frame.height != len(lines):
        return None
    return frame.with_columns(number=pl.Series([number for number, _ in lines], dtype=pl.Int64))


def _traces(frame: pl.DataFrame) -> pl.DataFrame:
    """The Langfuse traces among the rows, one row an observation (`sid`), with the trace's
    id, input, output and version (its `version`, else its `release`): either shape
    (`storage.spans.langfuse.is_langfuse_trace`)."""
    download = pl.col("trace").is_not_null()
    trace = pl.col("trace").struct
    items = pl.col("observations")
    whole = (
        items.is_not_null()
        & (items.list.len() > 0)
        & items.list.eval(
            pl.element().is_not_null() & pl.element().struct.field("type").is_not_null()
        ).list.all()
        & (download | (pl.col("id").is_not_null() & pl.col("timestamp").is_not_null()))
    )
    return (
        frame.filter(whole)
        .select(
            "number",
            pl.when(download).then(trace.field("id")).otherwise("id").alias("trace_id"),
            pl.when(download).then(trace.field("input")).otherwise("input").alias("trace_input"),
            pl.when(download).then(trace.field("output")).otherwise("output").alias("trace_output"),
            pl.coalesce(
                *(
                    pl.when(download).then(trace.field(key)).otherwise(key).replace("", None)
                    for key in ("version", "release")
                )
            ).alias("trace_version"),
            _tags_text(pl.when(download).then(trace.field("tags")).otherwise("tags")).alias(
                "trace_tags"
            ),
            "observations",
        )
        .explode("observations")
        .unnest("observations")
        .with_columns(
            attributes=pl.col("metadata").str.json_path_match("$.attributes"),
            resources=pl.col("metadata").str.json_path_match("$.resourceAttributes"),
        )
        .with_row_index("sid")
        .with_columns(pl.col("sid").cast(pl.Int64))
    )


def _tags_text(tags: pl.Expr) -> pl.Expr:
    """The text `storage.spans.langfuse.tags_text` makes of a list of tags, column-wise."""
    quoted = tags.list.eval(
        pl.struct(pl.element().alias("v")).struct.json_encode().str.slice(5).str.head(-1)
    )
    return pl.when(tags.list.len() > 0).then(
        pl.concat_str(pl.lit("["), quoted.list.join(","), pl.lit("]"))
    )


def _matches(column: str, pattern: str) -> pl.Expr:
    return pl.col(column).is_null() | (pl.col(column) == "") | pl.col(column).str.contains(pattern)


def _covered(spans: pl.DataFrame) -> pl.DataFrame:
    """The spans of the lines whose every observation this reading covers: ids Python's
    `strip()` leaves alone, kinds and levels in ASCII, times as Langfuse writes them."""
    ok = pl.all_horizontal(
        *(_matches(c, _PRINTABLE) for c in ("id", "traceId", "parentObservationId", "trace_id")),
        *(_matches(c, r"^[ -~]*$") for c in ("type", "level")),
        *(_matches(c, _TIME) for c in ("startTime", "endTime")),
    )
    return spans.filter(ok.all().over("number"))


def _brackets(value: pl.Expr) -> pl.Expr:
    return value.str.count_matches(r"[\[{]").fill_null(0)


def _maybe_deep(spans: pl.DataFrame, counts: pl.DataFrame) -> list[int]:
    """The lines that may nest deeper than MAX_JSON_DEPTH, found without reading them again:
    a value the schema holds (an input, output, metadata, at most 3 levels down) nests no
    deeper than its count of opening brackets; the rest of the line (fields the schema does
    not hold, and the line's own structure) no deeper than the line's count less theirs."""
    values = [_brackets(pl.col(name)) for name in ("input", "output", "metadata")]
    given = [_brackets(pl.col(name)) for name in ("trace_input", "trace_output")]
    per_line = spans.group_by("number").agg(
        known=pl.sum_horizontal(values).sum() + pl.sum_horizontal(given).first(),
        most=pl.max_horizontal(*values, *given).max(),
    )
    limit = MAX_JSON_DEPTH - 3
    return (
        per_line.join(counts, on="number")
        .filter((pl.col("most") > limit) | (pl.col("total") - pl.col("known") > limit))["number"]
        .to_list()
    )


def observations(lines: list[tuple[int, str]]) -> pl.DataFrame | None:
    """One row an observation (`sid`) of the lines this reading covers (numbered: `number`),
    with its line's `structured` flag; None for none."""
    texts = pl.Series([text for _, text in lines], dtype=pl.String)
    guarded = texts.str.contains(_GUARDS).to_list()
    candidates = [pair for pair, bad in zip(lines, guarded, strict=True) if not bad]
    frame = _read(candidates) if candidates else None
    if frame is None:
        return None
    flags = pl.DataFrame(
        {
            "number": pl.Series([number for number, _ in lines], dtype=pl.Int64),
            "structured": texts.str.contains(_STRUCTURED).not_(),
            "total": texts.str.count_matches(r"[\[{]"),
        }
    )
    spans = _traces(frame)
    doubtful = set(_maybe_deep(spans, flags.select("number", "total")))
    if doubtful:
        chosen = [(number, text) for number, text in candidates if number in doubtful]
        deep = _too_deep([text for _, text in chosen])
        too_deep = [number for (number, _), flag in zip(chosen, deep, strict=True) if flag]
        spans = spans.filter(~pl.col("number").is_in(too_deep))
    spans = _covered(spans.drop("metadata")).join(
        flags.drop("total"), on="number", how="left", maintain_order="left"
    )
    return None if spans.is_empty() else spans
