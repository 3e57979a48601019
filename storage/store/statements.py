"""The statements every DuckDB handle of tracegrade offers, over the connection its
`_con` gives: the store's (the database file attached) or its scratch side (temporary
tables only, the file not attached)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb

from storage.names import sql_string
from storage.store._connection import read_method, uninterrupted_method

if TYPE_CHECKING:  # imported where a frame is made: `tracegrade sql` starts without Polars
    import polars as pl

__all__ = ["Scratch", "Statements", "steps_with"]


def steps_with(fields: Sequence[str]) -> str:
    """The select item of a `steps` column that keeps only `fields` of each step."""
    picked = ", ".join(f"'{name}': s.{name}" for name in fields)
    return f"list_transform(steps, lambda s: {{{picked}}}) AS steps"


RESULT_BATCH_ROWS = 100_000
"""Rows of a query's result converted at a time: a result is streamed into Polars, so a large
one is not held a second (and third) time by DuckDB and by Arrow while it is converted."""


def _unique_names(names: list[str]) -> list[str]:
    """Column names made unique as DuckDB's own Polars export makes them: a repeated name
    gets `_1`, `_2`, ... (the first suffix not taken)."""
    taken: set[str] = set()
    unique = []
    for name in names:
        candidate, n = name, 0
        while candidate in taken:
            n += 1
            candidate = f"{name}_{n}"
        taken.add(candidate)
        unique.append(candidate)
    return unique


def _frame(relation: duckdb.DuckDBPyRelation) -> pl.DataFrame:
    """The relation's rows as one Polars frame (in chunks of RESULT_BATCH_ROWS)."""
    import polars as pl

    reader = relation.to_arrow_reader(RESULT_BATCH_ROWS)
    names = _unique_names(reader.schema.names)
    frames = [pl.DataFrame(batch.rename_columns(names)) for batch in reader]
    if not frames:
        return pl.DataFrame(reader.schema.empty_table().rename_columns(names))
    return frames[0] if len(frames) == 1 else pl.concat(frames, rechunk=False)


T = TypeVar("T")


class Statements:
    """Queries and loads by column name, through Arrow."""

    @property
    def _con(self) -> duckdb.DuckDBPyConnection:
        raise NotImplementedError

    def _read(self, call: Callable[[], T]) -> T:
        """Run a read (`read_method`); a store may try one again (DuckDBStore)."""
        return call()

    @read_method
    def sql(self, query: str, params: Sequence[Any] | None = None) -> pl.DataFrame:
        """Run a read query and return its rows."""
        return _frame(self._con.sql(query, params=params))

    @read_method
    def rows(self, query: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        """Run a read query and return its rows as tuples (no Polars: for small answers)."""
        return self._con.execute(query, params).fetchall()

    @read_method
    def numpy_columns(self, query: str) -> dict[str, Any]:
        """Run a read query and return its columns as NumPy arrays (no Polars, no Python
        object a row: for long answers of numbers)."""
        return dict(self._con.execute(query).fetchnumpy())

    @read_method
    def cursor_rows(self, query: str) -> tuple[list[str], list[str], duckdb.DuckDBPyConnection]:
        """Run a read query for `tracegrade sql`: its column names, their DuckDB types and the
        cursor to fetch its rows from (as Python values, with no Polars in between)."""
        cursor = self._con.execute(query)
        description = cursor.description or []
        return [d[0] for d in description], [str(d[1]) for d in description], cursor

    @uninterrupted_method
    def execute(self, statement: str, params: Sequence[Any] | None = None) -> None:
        """Run one statement that returns nothing the caller needs."""
        self._con.execute(statement, params).fetchall()

    @uninterrupted_method
    def copy_to(self, query: str, path: Path, params: Sequence[Any] | None = None) -> int:
        """Write a read query's rows, in its order, to the Parquet file `path` inside DuckDB
        (none of them pass through Python); returns how many rows it wrote."""
        ((written,),) = self._con.execute(
            f"COPY ({query}) TO {sql_string(path)} (FORMAT parquet)", params
        ).fetchall()
        return int(written)

    @read_method
    def sql_with(self, query: str, **frames: pl.DataFrame) -> pl.DataFrame:
        """Run a read query that refers to each of `frames` as `__<name>`."""
        with self._registered(frames):
            return _frame(self._con.sql(query))

    @uninterrupted_method
    def execute_with(self, statement: str, **frames: pl.DataFrame) -> None:
        """Run a statement that refers to each of `frames` as `__<name>`."""
        with self._registered(frames):
            self._con.execute(statement).fetchall()

    @contextmanager
    def _registered(self, frames: dict[str, pl.DataFrame]) -> Iterator[None]:
        for name, frame in frames.items():
            # registering begins a DuckLake transaction where one is attached: a read
            self._read(functools.partial(self._con.register, f"__{name}", frame))
        try:
            yield
        finally:
            for name in frames:
                self._con.unregister(f"__{name}")

    @uninterrupted_method
    def create_temp_table(self, name: str, empty: pl.DataFrame) -> None:
        """A temporary table `name` (gone when the connection closes) with `empty`'s columns."""
        with self._registered({"empty": empty}):
            self._con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT * FROM __empty")

    @uninterrupted_method
    def append(self, table: str, rows: pl.DataFrame) -> None:
        """Insert `rows` into `table` by column name, through Arrow."""
        with self._registered({"append": rows}):
            self._con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM __append")

    @uninterrupted_method
    def drop_temp(self, name: str) -> None:
        """Drop the temporary table or view `name`, if there is one."""
        kinds = self._con.execute(
            "SELECT 'TABLE' FROM duckdb_tables() WHERE temporary AND table_name = ? "
            "UNION ALL SELECT 'VIEW' FROM duckdb_views() WHERE temporary AND view_name = ?",
            [name, name],
        ).fetchall()
        for (kind,) in kinds:
            self._con.execute(f"DROP {kind} {name}")


class Scratch(Statements):
    """Statements on a connection as it is, without attaching anything; its reads run through
    `read` (its store's `_read`: where a DuckLake is attached, registering a frame or naming
    a `temp.` table still begins a DuckLake transaction, which reads its catalog)."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        read: Callable[[Callable[[], Any]], Any] | None = None,
    ) -> None:
        self._raw = con
        self._reader = read

    def _read(self, call: Callable[[], T]) -> T:
        return call() if self._reader is None else self._reader(call)

    @property
    def _con(self) -> duckdb.DuckDBPyConnection:
        return self._raw
