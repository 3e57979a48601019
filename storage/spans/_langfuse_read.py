"""Langfuse trace lines to one row an observation, decoded by msgspec, for `storage.spans._langfuse_lines`.

Each line is decoded in C against the public API's trace shape (`_Line`): the fields the
span rows need as text, each observation's `input`, `output` and `metadata` kept as the JSON
text the line holds (`msgspec.Raw`), read once in Python into column lists. A line whose
fields have another type (a number where text belongs, text where an object belongs) fails
the decoding and is left to the per-line reader, which keeps each rejection's rule and
reason; so is a line `json.loads` would read otherwise: one holding a surrogate escape (a
lone one is rejected there, and msgspec refuses it), NaN or Infinity (msgspec refuses them),
one nested deeper than the per-line reader allows, and one whose ids, kinds, levels or times
the columns would read otherwise than `storage.spans.langfuse` (`_covered`).

A value's text (`_text`): a string as its characters; an object or array as the JSON text
the line holds (the span columns decode it where they read it; with a `\\u` escape, as
`json.dumps` writes it, so that the columns' patterns see the characters); a number as
Python writes it; null as nothing. The metadata's attributes are cut into one row a key
(`_attribute_rows`, the `TOP` rows of `storage.spans._langfuse_columns`): text, integers and
booleans as the per-line reader writes them, anything else as JSON text it flattens.
"""

from __future__ import annotations

import json
from itertools import chain
from typing import Any

import msgspec
import numpy as np
import polars as pl
from msgspec.structs import astuple

from storage.inputs.json_values import MAX_JSON_DEPTH
from storage.inputs.surrogates import SURROGATE_ESCAPE
from storage.spans.langfuse import tags_text

__all__ = ["TOP", "observations"]

_NULL = msgspec.Raw(b"null")

TOP = {
    "sid": pl.Int64,
    "priority": pl.Int32,
    "ord": pl.Int64,
    "top": pl.String,
    "value": pl.String,
    "json": pl.String,
}
"""A span's attribute before it is flattened: `value` its text, `json` what `flat_pairs` must
write, neither for a null (which holds its key all the same, as the reader's `setdefault`)."""


# The decoded records hold text, raw JSON and each other, never a cycle: untracked by Python's
# cyclic collector (`gc=False`), which walked every one of them (9% of the import's samples).
class _Metadata(msgspec.Struct, gc=False):
    attributes: dict[str, msgspec.Raw] | None = None
    resourceAttributes: dict[str, msgspec.Raw] | None = None


class _Observation(msgspec.Struct, gc=False):
    id: str | None = None
    traceId: str | None = None
    parentObservationId: str | None = None
    type: str | None = None
    name: str | None = None
    startTime: str | None = None
    endTime: str | None = None
    level: str | None = None
    statusMessage: str | None = None
    input: msgspec.Raw = _NULL
    output: msgspec.Raw = _NULL
    metadata: _Metadata | str | None = None
    model: str | None = None


class _Trace(msgspec.Struct, gc=False):
    id: str | None = None
    input: msgspec.Raw = _NULL
    output: msgspec.Raw = _NULL
    version: str | None = None
    release: str | None = None
    tags: list[str] | None = None


class _Line(_Trace):
    timestamp: str | None = None
    trace: _Trace | None = None
    observations: list[_Observation] | None = None


class _TextMetadata(msgspec.Struct, gc=False):
    attributes: msgspec.Raw = _NULL
    resourceAttributes: msgspec.Raw = _NULL


_LINE = msgspec.json.Decoder(_Line)
_TEXT_METADATA = msgspec.json.Decoder(_TextMetadata)
_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_STRING = msgspec.json.Decoder(str)

_INTEGER = r"^(0|-?[1-9][0-9]{0,17})$"
"""An integer JSON text that Python writes back the same (`-0` is written 0)."""

_FIELDS = (
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
_RAW = ("input", "output")
"""The values kept as the JSON text the line holds (as `<name>_json`)."""
_METADATA_AT = len(_FIELDS) + len(_RAW)
"""Where an observation's metadata sits in `msgspec.structs.astuple`'s tuple."""

_LINE_SCHEMA = {
    "number": pl.Int64,
    "trace_id": pl.String,
    "trace_input_json": pl.Binary,
    "trace_output_json": pl.Binary,
    "trace_version": pl.String,
    "trace_tags": pl.String,
    "brackets": pl.Int64,
    "structure": pl.Int64,
    "quoted": pl.Int64,
}
_EMPTY: dict[str, msgspec.Raw] = {}


def _string(data: bytes) -> str:
    return data[1:-1].decode() if b"\\" not in data else _STRING.decode(data)


def _object(raw: msgspec.Raw) -> dict[str, msgspec.Raw]:
    """The attribute object a metadata's field holds; empty for anything else, as the
    per-line reader keeps only a mapping."""
    data = bytes(raw)
    return _OBJECT.decode(data) if data[:1] == b"{" else {}


def _text_metadata(text: str) -> tuple[dict[str, msgspec.Raw], dict[str, msgspec.Raw]]:
    """The attributes and resource attributes of a metadata given as text (Langfuse's
    downloads): decoded once, as `storage.spans._messages.decoded`; none for text that holds
    no object. Text that msgspec cannot decode leaves the line to the per-line reader."""
    if text.lstrip()[:1] not in ("{", "[", '"'):
        return {}, {}
    try:
        metadata = _TEXT_METADATA.decode(text)
    except msgspec.ValidationError:  # JSON, but not an object
        return {}, {}
    return _object(metadata.attributes), _object(metadata.resourceAttributes)


def _taken(line: _Line) -> bool:
    """The line is a Langfuse trace with its observations, in either shape
    (`storage.spans.langfuse.is_langfuse_trace`), every observation typed."""
    items = line.observations
    if not items or any(item.type is None for item in items):
        return False
    return line.trace is not None or (line.id is not None and line.timestamp is not None)


class _Columns:
    """What the decoded lines give: one entry a line (`lines`), an observation (`rows`, its
    fields as `msgspec.structs.astuple` gives them; `places`, its line's place) and two an
    observation (`attributes`: its attributes, then its resource attributes)."""

    def __init__(self) -> None:
        self.lines: dict[str, list[Any]] = {name: [] for name in _LINE_SCHEMA}
        self.rows: list[tuple[Any, ...]] = []
        self.places: list[int] = []
        self.attributes: list[dict[str, msgspec.Raw]] = []

    def add(self, number: int, text: str, line: _Line, escaped: bool) -> None:
        """One line's rows; text msgspec cannot decode raises before any is added. `escaped`:
        the line holds a `\\u` escape (a metadata text's brackets are then not counted)."""
        rows = list(map(astuple, line.observations or ()))
        trace = line.trace if line.trace is not None else line
        # brackets that are the line's own structure: the line, its observations' list and
        # each observation, the trace, its tags, each metadata and attribute object
        structure = 2 + len(rows) + (line.trace is not None) + (trace.tags is not None)
        found: list[dict[str, msgspec.Raw]] = []
        quoted = 0  # brackets inside metadata given as text, which nest nothing
        for row in rows:
            metadata = row[_METADATA_AT]
            if metadata.__class__ is _Metadata:
                pair = (metadata.attributes, metadata.resourceAttributes)
                structure += 1 + sum(item is not None for item in pair)
            elif metadata is None:
                pair = (None, None)
            else:
                pair = _text_metadata(metadata)
                quoted += 0 if escaped else metadata.count("[") + metadata.count("{")
            found += (pair[0] or _EMPTY, pair[1] or _EMPTY)
        version = next((tag for tag in (trace.version, trace.release) if tag), None)
        brackets = text.count("[") + text.count("{")
        given, got, tags = bytes(trace.input), bytes(trace.output), tags_text(trace.tags)
        values = (number, trace.id, given, got, version, tags, brackets, structure, quoted)
        for name, value in zip(_LINE_SCHEMA, values, strict=True):
            self.lines[name].append(value)
        self.places += [len(self.lines["number"]) - 1] * len(rows)
        self.rows += rows
        self.attributes += found


def _decoded(lines: list[tuple[int, str]]) -> _Columns:
    """The rows of the lines this reading takes (the module's docstring)."""
    columns = _Columns()
    for number, text in lines:
        escaped = "\\" in text and "\\u" in text  # one byte's search first: most lines hold none
        if escaped and SURROGATE_ESCAPE.search(text):
            continue
        try:
            line = _LINE.decode(text)
            if _taken(line):
                columns.add(number, text, line, escaped)
        except (msgspec.DecodeError, UnicodeDecodeError):
            continue
    return columns


def _brackets(value: pl.Expr) -> pl.Expr:
    return value.str.count_matches(r"[\[{]").fill_null(0)


def _nesting(value: pl.Expr) -> pl.Expr:
    """How deep a value given as JSON text may nest: a string not at all, anything else no
    deeper than its count of opening brackets."""
    return pl.when(value.str.starts_with('"')).then(0).otherwise(_brackets(value))


def _scalar(json_text: pl.Expr) -> pl.Expr:
    """JSON text of a string, a boolean or an integer that Python writes back the same."""
    return (
        json_text.str.starts_with('"')
        | json_text.is_in(["true", "false"])
        | json_text.str.contains(_INTEGER)
    )


def _scalar_text(json_text: pl.Expr) -> pl.Expr:
    """The text of a scalar's JSON text (`_scalar`), as the per-line reader writes it: a
    string's characters (its escapes decoded), a boolean or integer as it is; else null."""
    quoted = json_text.str.starts_with('"')
    escaped = quoted & json_text.str.contains("\\", literal=True)
    # decoded where escaped only: Polars may evaluate a branch over every row, and an object
    # decoded as a string is an error, not a null
    decoded = pl.when(escaped).then(json_text).str.json_decode(pl.String)
    return (
        pl.when(escaped)
        .then(decoded)
        .when(quoted)
        .then(json_text.str.slice(1, json_text.str.len_chars() - 2))
        .when(_scalar(json_text))
        .then(json_text)
    )


def _text(raw: str) -> pl.Expr:
    """A value's text from its JSON text (`raw`, a String column), as the span columns read
    it (the module's docstring); where Python must write it, a null and `_python` says so."""
    json_text = pl.col(raw)
    return (
        pl.when(_scalar(json_text))
        .then(_scalar_text(json_text))
        .when(json_text.str.contains(r"^[\[{]") & ~json_text.str.contains("\\u", literal=True))
        .then(json_text)
    )


def _python(raw: str) -> pl.Expr:
    """The values `_text` leaves to Python: a number it does not write as Python does, an
    object or array holding a `\\u` escape."""
    json_text = pl.col(raw)
    return json_text.is_not_null() & (json_text != "null") & _text(raw).is_null()


def _texts(frame: pl.DataFrame, names: tuple[str, ...]) -> pl.DataFrame:
    """`frame` with the text of each JSON text column (`<name>_json` as `<name>`)."""
    raws = [f"{name}_json" for name in names]
    frame = frame.with_columns(pl.col(raws).cast(pl.String))
    frame = frame.with_columns(_text(f"{name}_json").alias(name) for name in names)
    for name in names:
        wanted = frame.select(_python(f"{name}_json")).to_series()
        if wanted.any():
            written = pl.Series(
                [
                    json.dumps(json.loads(text), ensure_ascii=False) if want else None
                    for text, want in zip(frame[f"{name}_json"], wanted, strict=True)
                ],
                dtype=pl.String,
            )
            frame = frame.with_columns(pl.coalesce(pl.lit(written), name).alias(name))
    return frame


def _attribute_rows(found: list[dict[str, msgspec.Raw]]) -> pl.DataFrame:
    """The attributes, two objects an observation (`_Columns.attributes`), as `TOP` rows with
    the brackets of their JSON text (`brackets`): text, integers and booleans as the per-line
    reader writes them, a null as neither (it holds its key), anything else as JSON text
    `flat_pairs` writes."""
    sizes = np.fromiter(map(len, found), dtype=np.int64, count=len(found))
    owner = np.repeat(np.arange(len(found), dtype=np.int64), sizes)
    starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
    values = map(bytes, chain.from_iterable(map(dict.values, found)))
    pairs = pl.DataFrame(
        {
            "sid": owner // 2,
            "priority": (owner % 2).astype(np.int32),
            "ord": np.arange(owner.size, dtype=np.int64) - starts,
            "top": pl.Series(list(chain.from_iterable(found)), dtype=pl.String),
            "raw": pl.Series(list(values), dtype=pl.Binary).cast(pl.String),
        }
    )
    raw = pl.col("raw")
    written = pl.when(~_scalar(raw) & (raw != "null")).then(raw)
    return pairs.select(
        "sid",
        "priority",
        "ord",
        "top",
        _scalar_text(raw).alias("value"),
        written.alias("json"),
        _brackets(raw).alias("brackets"),
        _nesting(raw).alias("nests"),
    )


_JSON_STRING = r'"(?:[^"\\]|\\.)*"'
"""A JSON string with its escapes: in a line of valid JSON, every quote outside one starts
one, so removing the matches leaves the line's structure."""

_NEWLINE, _OPEN, _CLOSE = 10, 1, 2
_MARKS = bytes(
    {10: _NEWLINE, 91: _OPEN, 123: _OPEN, 93: _CLOSE, 125: _CLOSE}.get(b, 0) for b in range(256)
)
"""`bytes.translate` table: newlines and brackets kept (brackets as 1 or 2), every other
byte 0."""


def _too_deep(lines: list[str]) -> list[bool]:
    """Per line (each valid JSON): does it nest arrays and objects deeper than
    MAX_JSON_DEPTH? Its strings removed (Polars), the depth is the running count of opening
    less closing brackets, over all lines at once (NumPy)."""
    structure = pl.Series(lines, dtype=pl.String).str.replace_all(_JSON_STRING, "")
    data = ("\n".join(structure.to_list()) + "\n").encode()
    marks = np.frombuffer(data.translate(_MARKS), np.uint8)
    kind = marks[np.flatnonzero(marks)]
    step = np.where(kind == _OPEN, 1, np.where(kind == _CLOSE, -1, 0)).astype(np.int32)
    depth = np.cumsum(step, dtype=np.int32)
    ends = np.flatnonzero(kind == _NEWLINE)
    starts = np.concatenate(([0], ends[:-1] + 1))
    return (np.maximum.reduceat(depth, starts) > MAX_JSON_DEPTH).tolist()


_TIME = r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d{1,6})?(Z|[+-]\d\d:\d\d)?$"

_PRINTABLE = r"^[!-~]([ -~]*[!-~])?$"
"""Text Python's `strip()` leaves as it is and whose case Polars changes as Python does."""


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


def _deep_lines(spans: pl.DataFrame, pairs: pl.DataFrame, lines: pl.DataFrame) -> list[int]:
    """The numbers of the lines that may nest deeper than MAX_JSON_DEPTH, found without
    reading them again. Each value kept as JSON text nests no deeper than its count of
    opening brackets, from where it sits: an input or output 3 levels down (a trace's: 2),
    an attribute 5; the rest of the line (fields this reading does not keep, at most 4 levels
    down, in a metadata's other keys) no deeper than the line's brackets less theirs and
    less the line's own structure (`_Columns.add`)."""
    values = spans.select(
        "line",
        given=_brackets(pl.col("input_json")),
        got=_brackets(pl.col("output_json")),
        given_nests=_nesting(pl.col("input_json")),
        got_nests=_nesting(pl.col("output_json")),
    )
    per_span = values.group_by("line").agg(
        known=(pl.col("given") + pl.col("got")).sum(),
        most=pl.max_horizontal("given_nests", "got_nests").max() + 3,
    )
    owners = spans.select("sid", "line")
    per_pair = (
        pairs.join(owners, on="sid")
        .group_by("line")
        .agg(known_pairs=pl.col("brackets").sum(), most_pairs=pl.col("nests").max() + 5)
    )
    given = [_brackets(pl.col(f"trace_{name}_json")) for name in _RAW]
    nests = [_nesting(pl.col(f"trace_{name}_json")) for name in _RAW]
    found = (
        lines.with_row_index("line")
        .cast({"line": pl.Int64})
        .join(per_span, on="line", how="left")
        .join(per_pair, on="line", how="left")
        .fill_null(0)
    )
    rest = pl.col("brackets") - pl.col("structure") - pl.col("quoted") - pl.col("known")
    rest = rest - pl.col("known_pairs")
    deepest = pl.max_horizontal(
        pl.col("most"),
        pl.col("most_pairs"),
        *(side + 3 for side in nests),
        rest - pl.sum_horizontal(given) + 4,
    )
    return found.filter((pl.col("brackets") > MAX_JSON_DEPTH) & (deepest > MAX_JSON_DEPTH))[
        "number"
    ].to_list()


def observations(lines: list[tuple[int, str]]) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """One row an observation (`sid`) of the lines this reading takes (numbered: `number`),
    and their attributes (`TOP` rows); None for none."""
    columns = _decoded(lines)
    if not columns.rows:
        return None
    fields = list(zip(*columns.rows, strict=True))
    spans = pl.DataFrame(
        {
            "sid": np.arange(len(columns.rows), dtype=np.int64),
            "line": pl.Series(columns.places, dtype=pl.Int64),
            **{name: pl.Series(fields[at], dtype=pl.String) for at, name in enumerate(_FIELDS)},
            **{
                f"{name}_json": pl.Series(
                    list(map(bytes, fields[len(_FIELDS) + at])), dtype=pl.Binary
                ).cast(pl.String)
                for at, name in enumerate(_RAW)
            },
            "model": pl.Series(fields[_METADATA_AT + 1], dtype=pl.String),
        }
    )
    found = pl.DataFrame(columns.lines, schema=_LINE_SCHEMA).with_columns(
        pl.col("trace_input_json", "trace_output_json").cast(pl.String)
    )
    pairs = _attribute_rows(columns.attributes)
    doubtful = _deep_lines(spans, pairs, found)
    given = _texts(
        found.drop("brackets", "structure", "quoted").with_row_index("line"),
        ("trace_input", "trace_output"),
    )
    spans = spans.join(given.cast({"line": pl.Int64}), on="line", how="left", maintain_order="left")
    spans = _texts(spans, _RAW)
    if doubtful:
        texts = dict(lines)
        deep = _too_deep([texts[number] for number in doubtful])
        too_deep = [number for number, flag in zip(doubtful, deep, strict=True) if flag]
        spans = spans.filter(~pl.col("number").is_in(too_deep))
    spans = _covered(spans)
    if spans.is_empty():
        return None
    return spans, pairs.drop("brackets", "nests").filter(
        pl.col("sid").is_in(spans["sid"].implode())
    )
