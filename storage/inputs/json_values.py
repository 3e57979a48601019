"""One JSON record parsed safely: every way it can fail becomes a reason, never an exception.

The limits (docs/input-format.md, "Limits"): a record nested deeper than `MAX_JSON_DEPTH`
levels is rejected before anything walks it, and a file's nesting is measured before a
parser that could exhaust the stack (Polars' JSON reader) sees it. Python's own parser
refuses nesting past the interpreter's recursion limit with RecursionError, which is caught.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from storage.errors import RecordRejected
from storage.inputs.surrogates import SURROGATE_ESCAPE, holds_lone_surrogate, surrogate_reason

__all__ = [
    "MAX_JSON_DEPTH",
    "array_elements",
    "json_depth",
    "nesting_depth",
    "cut_array",
    "parse_record",
    "parse_values",
    "too_deep",
]

MAX_JSON_DEPTH = 100
"""Levels of nested arrays and objects a record may have (a record itself is level 1)."""

_OPEN, _CLOSE, _QUOTE, _BACKSLASH = (b"[{", b"]}", ord('"'), ord("\\"))


def json_depth(value: object) -> int:
    """Nesting levels of a parsed value (a scalar is 0, `{}` or `[]` is 1), walked without
    recursion so that no depth can exhaust the stack."""
    deepest = 0
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        pending.extend((child, level + 1) for child in children)
    return deepest


def _depth_profile(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The nesting depth after each byte of JSON text, and which bytes lie inside strings."""
    raw = np.frombuffer(data, dtype=np.uint8)
    backslash = raw == _BACKSLASH
    # length of the run of backslashes that ends just before each byte
    index = np.arange(len(raw))
    last_other = np.maximum.accumulate(np.where(backslash, -1, index))
    run_before = np.concatenate(([0], (index - last_other)[:-1]))
    quote = (raw == _QUOTE) & (run_before % 2 == 0)
    in_string = (np.cumsum(quote) % 2 == 1) | quote
    step = np.isin(raw, np.frombuffer(_OPEN, dtype=np.uint8)).astype(np.int64)
    step -= np.isin(raw, np.frombuffer(_CLOSE, dtype=np.uint8))
    step[in_string] = 0
    return np.cumsum(step), in_string


def nesting_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects anywhere in JSON text, brackets inside
    strings ignored; measured with array operations, before any parser runs."""
    if b"[" not in data and b"{" not in data:
        return 0
    depth, _ = _depth_profile(data)
    return int(depth.max(initial=0))


def array_elements(data: bytes) -> list[bytes] | None:
    """The texts of the elements of a JSON array, split at its top-level commas without
    parsing (so one element nested too deep can be rejected alone); None when `data` is not
    one array."""
    text = data.strip()
    if not text.startswith(b"[") or not text.endswith(b"]"):
        return None
    depth, in_string = _depth_profile(text)
    if depth[-1] != 0 or (depth[:-1] == 0).any():
        return None
    commas = np.flatnonzero(
        (np.frombuffer(text, dtype=np.uint8) == ord(",")) & (depth == 1) & ~in_string
    )
    edges = [0, *commas.tolist(), len(text) - 1]
    parts = [text[start + 1 : end] for start, end in zip(edges, edges[1:], strict=False)]
    return [] if parts == [b""] else parts


def _deeper_than_allowed(text: str, value: object) -> bool:
    """The parsed `value` of `text` nests deeper than MAX_JSON_DEPTH. Never when the text holds
    no more brackets than that; else the value's arrays and objects are visited a level at a
    time, without recursion, until a level holds none or one past the limit. Only containers
    are visited, so a record whose bytes are mostly text (a Langfuse trace holding JSON as
    text) costs little: 0.14 s where matching its strings out of the text took 0.51 s
    (docs/performance.md)."""
    if text.count("{") + text.count("[") <= MAX_JSON_DEPTH:
        return False
    level, containers = 0, [value] if type(value) in (dict, list) else []
    while containers:
        level += 1
        if level > MAX_JSON_DEPTH:
            return True
        inner: list[Any] = []
        for item in containers:
            children: Any = item.values() if type(item) is dict else item
            inner.extend(child for child in children if type(child) in (dict, list))
        containers = inner
    return False


def parse_record(text: str, where: str) -> Any:
    """The value of one JSON record (`where` names it: "line 3", "element 2").

    Raises:
        RecordRejected: not JSON (`invalid_json`), nested deeper than MAX_JSON_DEPTH
            (`too_deep`), or holding a lone UTF-16 surrogate (`invalid_text`).
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise too_deep(where) from None
    except json.JSONDecodeError as exc:
        at = f"line {exc.lineno}, column {exc.colno}" if exc.lineno > 1 else f"column {exc.colno}"
        raise RecordRejected(
            "invalid_json", f"{where} is not valid JSON ({exc.msg} at {at})"
        ) from None
    return _checked(text, value, where)


def _checked(text: str, value: Any, where: str) -> Any:
    """The `value` parsed from `text`, once the limits hold: no nesting past MAX_JSON_DEPTH,
    no lone UTF-16 surrogate."""
    if _deeper_than_allowed(text, value):
        raise too_deep(where)
    if SURROGATE_ESCAPE.search(text) and holds_lone_surrogate(value):
        raise RecordRejected("invalid_text", surrogate_reason(where))
    return value


def parse_values(text: str, where: str) -> list[Any]:
    """The JSON values of a text that holds several one after another, separated by white
    space and nothing else (what the OpenTelemetry SDK's `ConsoleSpanExporter` prints: each
    span pretty-printed, then a newline), each parsed once and checked as `parse_record`
    checks a record.

    Raises:
        RecordRejected: a piece that is not JSON (its line and column in the text), or a
            value `parse_record` refuses (named `where` and its number).
    """
    decoder = json.JSONDecoder()
    values: list[Any] = []
    at = 0
    while True:
        while at < len(text) and text[at] in " \t\r\n":
            at += 1
        if at == len(text):
            return values
        named = f"{where}, value {len(values) + 1}"
        try:
            value, end = decoder.raw_decode(text, at)
        except RecursionError:
            raise too_deep(named) from None
        except json.JSONDecodeError as exc:
            raise RecordRejected(
                "invalid_json",
                f"{where} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
            ) from None
        values.append(_checked(text[at:end], value, named))
        at = end


def cut_array(text: str, where: str) -> tuple[list[Any], str] | None:
    """The complete elements of a JSON array that `text` opens and never closes, because it
    ends inside it (a file cut off while it was written: an exporter that writes `[` first and
    `]` when it closes the file, killed before), and the reason the rest is not read; None
    when `text` is not such an array (it breaks elsewhere, or is not cut at all).

    Raises:
        RecordRejected: a complete element past the limits `parse_record` checks.
    """
    decoder = json.JSONDecoder()
    at = len(text) - len(text.lstrip())
    if text[at : at + 1] != "[":
        return None
    end = len(text.rstrip())
    values: list[Any] = []
    at += 1
    while True:
        while at < end and text[at] in " \t\r\n,":
            at += 1
        if at >= end:
            break
        named = f"{where}, element {len(values) + 1}"
        try:
            value, after = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            if exc.pos < end - 1 and not exc.msg.startswith("Unterminated"):
                return None  # broken before the text ends: not a cut
            break
        except RecursionError:
            raise too_deep(named) from None
        values.append(_checked(text[at:after], value, named))
        at = after
        if text[at:end].lstrip(" \t\r\n").startswith("]"):
            return None  # the array closes: whatever breaks is after it
    line = text.count("\n", 0, at) + 1
    reason = (
        f"{where} ends inside its JSON array after {len(values)} complete elements (cut off "
        f"while it was written?): the rest, from line {line}, is not read"
    )
    return values, reason


def too_deep(where: str) -> RecordRejected:
    """The problem of a record nested deeper than MAX_JSON_DEPTH."""
    return RecordRejected(
        "too_deep",
        f"{where} nests arrays and objects more than {MAX_JSON_DEPTH} levels deep; "
        "flatten the record (docs/input-format.md, Limits)",
    )
