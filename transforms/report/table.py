"""A query's answer as the report uses it: column names and rows of Python values, as DuckDB
returns them. The report's aggregates are small (bins, days, agents), so they need no data
frame library: the report loads neither Polars nor Arrow, and starts in a third of the time."""

from __future__ import annotations

import html
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from transforms.words import NONE

__all__ = ["Table", "table_html"]


@dataclass(frozen=True)
class Table:
    """Rows of a query, in its order, with its column names."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]

    @property
    def height(self) -> int:
        return len(self.rows)

    def is_empty(self) -> bool:
        return not self.rows

    def column(self, name: str) -> list[Any]:
        """One column's values, in row order."""
        index = self.columns.index(name)
        return [row[index] for row in self.rows]

    def where(self, name: str, value: Any) -> Table:
        """The rows whose column `name` equals `value`."""
        index = self.columns.index(name)
        return Table(self.columns, [row for row in self.rows if row[index] == value])

    def groups(self, name: str) -> Iterator[tuple[Any, Table]]:
        """(value, its rows) for each value of column `name`, in order of first appearance."""
        index = self.columns.index(name)
        grouped: dict[Any, list[tuple[Any, ...]]] = {}
        for row in self.rows:
            grouped.setdefault(row[index], []).append(row)
        for value, rows in grouped.items():
            yield value, Table(self.columns, rows)

    def sorted_by(self, name: str) -> Table:
        """The rows ordered by column `name` (stable: ties keep their order)."""
        index = self.columns.index(name)
        return Table(self.columns, sorted(self.rows, key=lambda row: row[index]))

    def to_dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


def _cell(value: Any) -> str:
    if value is None:
        return f'<td class="none">{NONE}</td>'
    if isinstance(value, list):
        value = ", ".join(str(item) for item in value)
    if isinstance(value, float):
        return f'<td class="num">{value:,.4f}</td>'
    if isinstance(value, int) and not isinstance(value, bool):
        return f'<td class="num">{value:,}</td>'
    return f"<td>{html.escape(str(value))}</td>"


def table_html(table: Table, limit: int | None = None) -> str:
    """The rows (the first `limit` of them) as an HTML table: numbers right-aligned with
    thousands separators, floats to four decimals, a null as `NONE`, text escaped."""
    head = "".join(f"<th>{html.escape(name)}</th>" for name in table.columns)
    body = "".join(
        "<tr>" + "".join(_cell(value) for value in row) + "</tr>" for row in table.rows[:limit]
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
