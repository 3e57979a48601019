"""JSON and JSON Lines trace files to canonical rows.

Each record is checked field by field: a value of the wrong type is nulled and
named in `read_reason` (rule `wrong_type`), so one bad record never stops the
file and the quarantine says exactly which field to fix. Values are gathered
column by column (steps flat, with list offsets) and handed to Arrow once.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import polars as pl
import pyarrow as pa

from storage.errors import FileRejected
from storage.inputs.canonical import CANONICAL_SCHEMA, STEP_DTYPE, content_hashes, parse_created_at
from storage.inputs.surrogates import SURROGATE_ESCAPE, holds_lone_surrogate, surrogate_reason
from transforms.trace_schema import STEP_FILE_FIELDS, Field, file_groups, step_arrow_type

__all__ = ["read_json_rows"]

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_FLOAT_MAX = 1.7976931348623157e308


def _is_string(value: object) -> bool:
    return type(value) is str


def _is_boolean(value: object) -> bool:
    return type(value) is bool


def _is_number(value: object) -> bool:
    # bool is an int subclass but not a number here; ints must fit a float.
    return type(value) is float or (type(value) is int and -_FLOAT_MAX <= value <= _FLOAT_MAX)


def _is_integer(value: object) -> bool:
    return type(value) is int and _INT64_MIN <= value <= _INT64_MAX


def _is_strings(value: object) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


_KINDS: dict[str, tuple[str, Callable[[object], bool]]] = {
    "string": ("a string", _is_string),
    "strings": ("a list of strings", _is_strings),
    "timestamp": ("an ISO-8601 string", _is_string),
    "boolean": ("true or false", _is_boolean),
    "number": ("a number", _is_number),
    "integer": ("an integer (64-bit)", _is_integer),
}


def _column(f: Field) -> str:
    """The canonical column a trace field's value is gathered into: a timestamp as its text."""
    return f"{f.name}_raw" if f.kind == "timestamp" else f.name


_STEP_KINDS = tuple(
    (f.name, f.kind) for f in STEP_FILE_FIELDS if f.path == (f.name,) and f.name != "input"
)
"""The step fields checked by kind alone (`tool.name` and `input` have their own checks)."""
_TRACE_FIELDS = tuple(
    (key, len(fields[0].path) > 1, tuple((f.path[-1], f.label, f.kind, _column(f)) for f in fields))
    for key, fields in file_groups().items()
    if key != "steps"
)
"""Per top-level key of a trace object: whether it is an object of fields, and its fields as
(key, label, kind, canonical column)."""
_TRACE_COLUMNS = [
    name
    for name in CANONICAL_SCHEMA
    if name not in ("source_file", "created_at", "steps", "content_hash")
]
_STEP_ARROW = step_arrow_type(large=True)
"""A step as gathered: the fast path in `_Columns._add_step` builds its tuples in this order."""


def _describe(value: object) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _input_text(value: dict[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class _Columns:
    """Canonical rows being gathered from trace objects, one record at a time.

    Traces and steps are kept as tuples in column order and transposed once in
    `frame`; steps are flat, with list offsets per trace.
    """

    def __init__(self) -> None:
        self.traces: list[tuple[Any, ...]] = []
        self.steps: list[tuple[Any, ...]] = []
        self.offsets = [0]
        self.problems: list[str] = []

    def _typed(self, parent: dict[str, Any], key: str, label: str, kind: str) -> Any:
        value = parent.get(key)
        if value is None:
            return None
        allowed, check = _KINDS[kind]
        if check(value):
            return value
        self.problems.append(f"{label} must be {allowed}, got {_describe(value)}")
        return None

    def _object(self, parent: dict[str, Any], key: str) -> dict[str, Any]:
        value = parent.get(key)
        if value is None:
            return {}
        if type(value) is dict:
            return value
        self.problems.append(f"{key} must be an object, got {_describe(value)}")
        return {}

    def _add_step(self, number: int, raw: object) -> None:
        if type(raw) is dict:
            get = raw.get
            step_id, kind, content = get("step_id"), get("type"), get("content")
            summary, latency, tool, raw_input = (
                get("output_summary"),
                get("latency_ms"),
                get("tool"),
                get("input"),
            )
            name = tool.get("name") if type(tool) is dict else None
            if (
                (step_id is None or _is_integer(step_id))
                and (kind is None or type(kind) is str)
                and (content is None or type(content) is str)
                and (summary is None or type(summary) is str)
                and (latency is None or type(latency) is float or _is_number(latency))
                and (tool is None or (type(tool) is dict and (name is None or type(name) is str)))
                and (raw_input is None or type(raw_input) is str or type(raw_input) is dict)
            ):
                if type(raw_input) is dict:
                    raw_input = _input_text(raw_input)
                self.steps.append(
                    (step_id, kind, content, tool is not None, name, raw_input, summary, latency)
                )
                return
        self._add_checked_step(number, raw)

    def _add_checked_step(self, number: int, raw: object) -> None:
        """Gather a step that has a value of the wrong type, naming each one."""
        if type(raw) is not dict:
            self.problems.append(f"step {number} must be an object, got {_describe(raw)}")
            raw = {}
        assert isinstance(raw, dict)
        label = f"step {number}"
        values = {key: self._typed(raw, key, f"{label} {key}", kind) for key, kind in _STEP_KINDS}
        tool = raw.get("tool")
        if tool is not None and type(tool) is not dict:
            self.problems.append(f"{label} tool must be an object, got {_describe(tool)}")
            tool = None
        name = None if tool is None else self._typed(tool, "name", f"{label} tool.name", "string")
        raw_input = raw.get("input")
        if type(raw_input) is dict:
            raw_input = _input_text(raw_input)
        elif raw_input is not None and type(raw_input) is not str:
            self.problems.append(
                f"{label} input must be an object or a JSON string, got {_describe(raw_input)}"
            )
            raw_input = None
        self.steps.append(
            (
                values["step_id"],
                values["type"],
                values["content"],
                tool is not None,
                name,
                raw_input,
                values["output_summary"],
                values["latency_ms"],
            )
        )

    def add(self, number: int, obj: dict[str, Any]) -> None:
        """Gather one trace object, naming every field of the wrong type."""
        self.problems = []
        values: dict[str, Any] = {"row_number": number}
        for key, nested, fields in _TRACE_FIELDS:
            parent = self._object(obj, key) if nested else obj
            for name, label, kind, column in fields:
                values[column] = self._typed(parent, name, label, kind)
        raw_steps = obj.get("steps")
        if raw_steps is not None and type(raw_steps) is not list:
            self.problems.append(f"steps must be a list, got {_describe(raw_steps)}")
            raw_steps = None
        for step_number, step in enumerate(raw_steps or (), start=1):
            self._add_step(step_number, step)
        self.offsets.append(len(self.steps))
        if self.problems:
            values["read_rule"] = "wrong_type"
            values["read_reason"] = "; ".join(self.problems)
        self.traces.append(tuple(values.get(name) for name in _TRACE_COLUMNS))

    def add_rejected(self, number: int, reason: str) -> None:
        """Gather a record that is not a trace object at all."""
        values = {"row_number": number, "read_rule": "invalid_json", "read_reason": reason}
        self.traces.append(tuple(values.get(name) for name in _TRACE_COLUMNS))
        self.offsets.append(len(self.steps))

    def frame(self, path: str) -> pl.DataFrame:
        """The canonical frame of everything gathered."""
        step_columns = list(zip(*self.steps, strict=True)) or [()] * len(_STEP_ARROW)
        steps_arrow = pa.LargeListArray.from_arrays(
            pa.array(self.offsets, pa.int64()),
            pa.StructArray.from_arrays(
                [
                    pa.array(column, f.type)
                    for column, f in zip(step_columns, _STEP_ARROW, strict=True)
                ],
                fields=list(_STEP_ARROW),
            ),
        )
        trace_columns = list(zip(*self.traces, strict=True)) or [()] * len(_TRACE_COLUMNS)
        frame = pl.DataFrame(
            dict(zip(_TRACE_COLUMNS, trace_columns, strict=True)),
            schema={name: CANONICAL_SCHEMA[name] for name in _TRACE_COLUMNS},
        )
        frame = frame.with_columns(
            source_file=pl.lit(path, dtype=pl.String),
            created_at=parse_created_at(frame.get_column("created_at_raw")),
            steps=pl.Series("steps", steps_arrow).cast(pl.List(STEP_DTYPE)),
        )
        frame = frame.with_columns(content_hash=content_hashes(frame))
        return frame.select(list(CANONICAL_SCHEMA))


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while millions of acyclic objects are made.

    Parsed JSON holds no reference cycles, and collection passes triggered by
    the allocations alone more than double the time a large file takes.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise FileRejected(
            "unreadable_file",
            f"not UTF-8 text ({exc}); re-export the file as UTF-8 JSON",
        ) from exc


def _jsonl_objects(text: str) -> Iterator[tuple[int, object, str | None]]:
    """(line number, parsed value, parse error) per non-blank line."""
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError) as exc:
            yield number, None, f"line {number} is not valid JSON: {exc}"
            continue
        if SURROGATE_ESCAPE.search(line) and holds_lone_surrogate(value):
            yield number, None, surrogate_reason(f"line {number}")
        else:
            yield number, value, None


def _json_objects(text: str) -> Iterator[tuple[int, object, str | None]]:
    """(element number, value, None) per element of the document's array."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise FileRejected(
            "unreadable_file",
            f"not valid JSON ({exc}); a .json file holds one array of trace objects or one "
            "object; for one object per line use the .jsonl extension",
        ) from exc
    if isinstance(document, dict):
        document = [document]
    if not isinstance(document, list):
        raise FileRejected(
            "unreadable_file",
            f"the JSON document is a {type(document).__name__}, expected an array of trace "
            "objects or one trace object",
        )
    check = SURROGATE_ESCAPE.search(text) is not None
    for number, value in enumerate(document, start=1):
        if check and holds_lone_surrogate(value):
            yield number, None, surrogate_reason(f"element {number}")
        else:
            yield number, value, None


def read_json_rows(path: str, data: bytes, *, lines: bool) -> pl.DataFrame:
    """Canonical rows of one JSON (`lines=False`) or JSON Lines (`lines=True`) file.

    Args:
        path: The file's path, written into `source_file`.
        data: The file's bytes.
        lines: True for one object per line, False for one array or object.

    Raises:
        FileRejected: The file is not UTF-8, or a `.json` document does not parse.
    """
    text = _decode(data)
    where = "line" if lines else "element"
    columns = _Columns()
    with _gc_paused():
        for number, value, error in (_jsonl_objects if lines else _json_objects)(text):
            if error is not None:
                columns.add_rejected(number, error)
            elif type(value) is dict:
                columns.add(number, value)
            else:
                columns.add_rejected(
                    number,
                    f"{where} {number} is a JSON {type(value).__name__}, expected a trace object",
                )
        return columns.frame(path)
