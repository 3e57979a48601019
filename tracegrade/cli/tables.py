"""Query results as the duckdb CLI prints them (`tracegrade sql`): a box fitted to the
terminal, with long values folded over several lines and a result too wide for any box shown
one column per line; or CSV, JSON, JSON lines or Markdown for scripts and documents.

A missing value (SQL NULL) is `(none)` wherever a person reads it, as in the run summary and
the report; the machine formats keep it missing (an empty CSV field, JSON null).
"""

from __future__ import annotations

import csv
import json
import textwrap
from collections.abc import Iterable, Sequence
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any, TextIO

from transforms.words import NONE

__all__ = ["HUMAN_MODES", "MODES", "NONE", "render", "write_machine"]


MODES = ("box", "line", "csv", "json", "jsonl", "markdown")
HUMAN_MODES = ("box", "line", "markdown")

_NARROWEST = 8
"""A folded column keeps at least this many characters (or its header's)."""


def _plain(value: Any) -> Any:
    """A value as JSON holds it: dates and times as ISO text, decimals as numbers."""
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def cell_text(value: Any, none: str = NONE) -> str:
    """A value as one cell shows it."""
    if value is None:
        return none
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dict | list | tuple):
        return json.dumps(_plain(value), ensure_ascii=False)
    return str(value)


def _numeric(type_name: str) -> bool:
    name = type_name.upper()
    return any(word in name for word in ("INT", "DOUBLE", "FLOAT", "DECIMAL", "REAL", "NUMERIC"))


def _widths(natural: list[int], floor: list[int], room: int) -> list[int] | None:
    """Column widths that fit `room` characters: the natural ones, or the widest capped at
    one limit; None when even `floor` does not fit."""
    if sum(natural) <= room:
        return natural
    if sum(floor) > room:
        return None
    cap = max(natural)
    while cap > 0 and sum(max(min(n, cap), f) for n, f in zip(natural, floor, strict=True)) > room:
        cap -= 1
    return [max(min(n, cap), f) for n, f in zip(natural, floor, strict=True)]


def _longest_line(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def _fold(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for part in text.splitlines() or [""]:
        lines += textwrap.wrap(part, width, break_long_words=True, drop_whitespace=False) or [""]
    return lines


def _box(
    columns: Sequence[str], types: Sequence[str], cells: list[list[str]], width: int
) -> str | None:
    """The rows in a box of at most `width` characters, or None when they cannot fit."""
    heads = [[name, type_name.lower()] for name, type_name in zip(columns, types, strict=True)]
    natural = [
        max([len(h) for h in head] + [_longest_line(c[i]) for c in cells])
        for i, head in enumerate(heads)
    ]
    floor = [min(n, max(_NARROWEST, len(h[0]))) for n, h in zip(natural, heads, strict=True)]
    fitted = _widths(natural, floor, width - 3 * len(columns) - 1)
    if fitted is None:
        return None
    right = [_numeric(t) for t in types]

    def rule(left: str, mid: str, end: str) -> str:
        return left + mid.join("─" * (w + 2) for w in fitted) + end

    def row(values: list[str], align: bool) -> list[str]:
        folded = [_fold(v, w) for v, w in zip(values, fitted, strict=True)]
        out = []
        for k in range(max(len(f) for f in folded)):
            parts = []
            for f, w, numeric in zip(folded, fitted, right, strict=True):
                text = f[k] if k < len(f) else ""
                parts.append(text.rjust(w) if align and numeric else text.ljust(w))
            out.append("│ " + " │ ".join(parts) + " │")
        return out

    lines = [rule("┌", "┬", "┐")]
    lines += row([h[0] for h in heads], False) + row([h[1] for h in heads], False)
    lines.append(rule("├", "┼", "┤"))
    for cell_row in cells:
        lines += row(cell_row, True)
    lines.append(rule("└", "┴", "┘"))
    return "\n".join(lines)


def _lines(columns: Sequence[str], cells: list[list[str]], width: int) -> str:
    """One `column = value` line per column, a blank line between rows (duckdb's line mode);
    long values folded under themselves."""
    pad = max((len(c) for c in columns), default=0)
    room = max(width - pad - 3, 20)
    blocks = []
    for cell_row in cells:
        out = []
        for name, value in zip(columns, cell_row, strict=True):
            folded = _fold(value, room)
            out.append(f"{name.rjust(pad)} = {folded[0]}")
            out += [" " * (pad + 3) + rest for rest in folded[1:]]
        blocks.append("\n".join(out))
    return "\n\n".join(blocks)


def _markdown(columns: Sequence[str], cells: list[list[str]]) -> str:
    def escape(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", "<br>")

    lines = ["| " + " | ".join(escape(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(escape(v) for v in row) + " |" for row in cells]
    return "\n".join(lines)


def render(
    mode: str,
    columns: Sequence[str],
    types: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    width: int,
    none: str = NONE,
    fit: bool = True,
) -> tuple[str, str | None]:
    """`rows` as a person reads them in `mode` (box, line or markdown), and a note when the
    box did not fit `width` and the rows are shown one column per line instead. With `fit`
    False a box is drawn whatever its width (each column at least its narrowest)."""
    cells = [[cell_text(v, none) for v in row] for row in rows]
    if mode == "markdown":
        return _markdown(columns, cells), None
    if mode == "box":
        boxed = _box(columns, types, cells, width if fit else 10**6)
        if boxed is not None:
            return boxed, None
        note = (
            f"{len(columns)} columns do not fit {width} characters: one per line; --mode box "
            "for a box, csv or json for scripts"
        )
        return _lines(columns, cells, width), note
    return _lines(columns, cells, width), None


def write_machine(
    mode: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], out: TextIO
) -> None:
    """`rows` as CSV (with a header; a missing value is an empty field), a JSON array of
    objects, or JSON lines (one object a line); nested values as JSON."""
    if mode == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(["" if v is None else cell_text(v) for v in row])
        return
    first = True
    if mode == "json":
        out.write("[")
    for row in rows:
        item = json.dumps(
            {c: _plain(v) for c, v in zip(columns, row, strict=True)}, ensure_ascii=False
        )
        if mode == "json":
            out.write(("\n" if first else ",\n") + item)
        else:
            out.write(item + "\n")
        first = False
    if mode == "json":
        out.write("\n]\n" if not first else "]\n")
