"""What a file looks like from its first bytes: its first record (or Parquet columns), for
the format registry (`storage.inputs.formats`) to recognise the file by, without reading it whole.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage.inputs.input_paths import PARQUET_EXTENSIONS, PROTOBUF_EXTENSIONS

__all__ = ["Peek", "peek"]

_HEAD_BYTES = 1 << 16
"""What is read first; doubled while the first record does not fit, up to `_MOST_BYTES`."""
_MOST_BYTES = 8 << 20
_LINES = 100
"""How many lines of JSON lines are tried for a first record that parses."""
_FIRST_KEY = re.compile(rb'^\s*\{\s*"((?:[^"\\]|\\.)*)"\s*:')


@dataclass(frozen=True)
class Peek:
    """What a file looks like from its first bytes, for the formats to recognise it by.

    Attributes:
        suffix: The lower-case extension.
        columns: A Parquet file's top-level column names, else None.
        record: The first record: a JSON document's first array element, the document itself
            when it is an object, or the first JSON line that parses; None when none could be
            parsed.
        first_key: The first key of a JSON object too large to parse from its head.
        leading: The members of such an object that its head holds whole, in order (its
            first members up to the first that runs past the head).
        damaged: The file cannot be taken for what its extension says (a Parquet file whose
            footer cannot be read, bytes that are not UTF-8 text): the reader of its extension
            says why, as it would for a file named with a format.
    """

    suffix: str
    columns: tuple[str, ...] | None = None
    record: Any = None
    first_key: str | None = None
    leading: dict[str, Any] = field(default_factory=dict)
    damaged: bool = False


def _parquet_columns(path: Path) -> tuple[str, ...] | None:
    import pyarrow.parquet as pq

    try:
        return tuple(pq.ParquetFile(path).schema_arrow.names)
    except Exception:  # a damaged file: its reader quarantines it with the reason
        return None


def _first_value(text: str) -> tuple[Any, bool]:
    """The first JSON value of `text` (the first element when it opens an array), and whether
    one was found whole."""
    decoder = json.JSONDecoder()
    start = len(text) - len(text.lstrip())
    if text[start : start + 1] == "[":
        inner = text[start + 1 :]
        start = len(text) - len(inner.lstrip())
        if text[start : start + 1] == "]":
            return [], True
    try:
        return decoder.raw_decode(text, start)[0], True
    except ValueError:
        return None, False


def _leading_members(text: str) -> dict[str, Any]:
    """The members of the JSON object `text` opens that it holds whole, up to the first that
    it cuts (or that does not parse)."""
    decoder = json.JSONDecoder()
    members: dict[str, Any] = {}
    at = len(text) - len(text.lstrip()) + 1  # past the opening brace
    try:
        while True:
            at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
            key, at = decoder.raw_decode(text, at)
            at = _COLON.match(text, at).end()  # type: ignore[union-attr]
            value, at = decoder.raw_decode(text, _SPACE.match(text, at).end())  # type: ignore[union-attr]
            members[key] = value
            at = _COMMA.match(text, at).end()  # type: ignore[union-attr]
    except (ValueError, AttributeError):
        return members


_SPACE = re.compile(r"\s*")
_COLON = re.compile(r"\s*:")
_COMMA = re.compile(r"\s*,")


def _first_line_record(text: str) -> Any:
    """The first of the first lines that parses as a JSON object: JSON lines whose first
    line is broken are still recognised by the next (the broken line is the reader's to
    quarantine)."""
    for line in text.splitlines()[:_LINES]:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _not_text(head: bytes) -> bool:
    """Bytes that are not UTF-8 (a cut at the end of the head aside)."""
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 4
    return False


def peek(path: Path) -> Peek:
    """What `path` starts with; raises OSError when it cannot be read."""
    suffix = path.suffix.lower()
    with path.open("rb") as handle:
        head = handle.read(_HEAD_BYTES)
        if head.startswith(b"PAR1") or suffix in PARQUET_EXTENSIONS:
            columns = _parquet_columns(path)
            return Peek(suffix, columns=columns, damaged=columns is None)
        if suffix in PROTOBUF_EXTENSIONS:
            return Peek(suffix)
        if _not_text(head):
            return Peek(suffix, damaged=True)
        size = _HEAD_BYTES
        while True:
            text = head.decode("utf-8", errors="ignore").lstrip("\ufeff")
            value, whole = _first_value(text)
            if whole or len(head) < size or size >= _MOST_BYTES:
                break
            head += handle.read(size)
            size *= 2
    if whole:
        return Peek(suffix, record=value)
    stripped = text.lstrip()
    if not stripped.startswith("[") and stripped.split("\n", 1)[0].strip() != "{":
        record = _first_line_record(text)
        if record is not None:
            return Peek(suffix, record=record)
    key = _FIRST_KEY.match(head.removeprefix(b"\xef\xbb\xbf"))
    if key is None and stripped[:1] in ("{", "["):  # JSON that does not parse: say where
        return Peek(suffix, damaged=True)
    if key is None:
        return Peek(suffix)
    return Peek(
        suffix,
        first_key=key.group(1).decode("utf-8", "replace"),
        leading=_leading_members(stripped),
    )
