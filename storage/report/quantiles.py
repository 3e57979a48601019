"""Exact quantiles in DuckDB, interpolated as Polars' "linear" ones (NumPy's default) to the
last bit: the one quantile every figure tracegrade shows is (the run summary, the HTML report,
the artifacts of a Prefect flow run), so one median has one value wherever it is read.

DuckDB's own `quantile_cont` interpolates as `lo * (1 - d) + hi * d`, Polars as
`lo + (hi - lo) * d`, and the two differ in the last bit about once in seven; `approx_quantile`
(a t-digest) differs in the third or fourth decimal. So each group's values are ranked (a sort,
which DuckDB spills to disk when memory is short, where `quantile_cont` keeps every value of a
group in memory), and each quantile interpolates the two neighbours of its position
`(n - 1) * q` the way Polars does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["quantiles_sql"]


def _one_column(source: str, groups: Sequence[str], column: str, wanted: dict[str, float]) -> str:
    """(groups..., name, value) for each quantile of `wanted` over `column`'s non-null values."""
    keys = ", ".join(groups)
    lo_on, hi_on = (" AND ".join(f"{side}.{g} = p.{g}" for g in groups) for side in ("lo", "hi"))
    values = ", ".join(f"('{name}', {q!r}::DOUBLE)" for name, q in wanted.items())
    return f"""
    WITH v AS (
      SELECT {keys}, {column} AS v FROM {source} WHERE {column} IS NOT NULL
    ), counts AS (
      SELECT {keys}, count(*) AS n FROM v GROUP BY ALL
    ), positions AS (
      SELECT {keys}, name, (n - 1)::DOUBLE * q AS rn FROM counts, (VALUES {values}) w(name, q)
    ), places AS (
      SELECT DISTINCT {keys}, unnest([floor(rn), ceil(rn)])::BIGINT AS i FROM positions
    ), ranked AS (
      SELECT {keys}, v, row_number() OVER (PARTITION BY {keys} ORDER BY v) - 1 AS i FROM v
    ), picked AS (
      SELECT * FROM ranked SEMI JOIN places USING ({keys}, i)
    )
    SELECT {", ".join(f"p.{g}" for g in groups)}, p.name,
      CASE WHEN lo.i = hi.i THEN lo.v
        ELSE lo.v + (hi.v - lo.v) * (p.rn - floor(p.rn)) END AS value
    FROM positions p
    JOIN picked lo ON {lo_on} AND lo.i = floor(p.rn)::BIGINT
    JOIN picked hi ON {hi_on} AND hi.i = ceil(p.rn)::BIGINT
    """


def quantiles_sql(
    source: str, groups: Sequence[str], wanted: Mapping[str, tuple[str, float]]
) -> str:
    """SQL of one row per group of `source` that has a value: the columns `groups`, then one
    column per entry of `wanted` (output name -> (value column, q)), that quantile of the
    group's non-null values (null where the group has none of that column).

    `source` is a relation (a table name or a parenthesised query) whose `groups` columns are
    never null; it is read once per value column.
    """
    columns: dict[str, dict[str, float]] = {}
    for name, (column, q) in wanted.items():
        columns.setdefault(column, {})[name] = q
    parts = [_one_column(source, groups, column, qs) for column, qs in columns.items()]
    keys = ", ".join(groups)
    pivoted = ",\n  ".join(
        f"any_value(value) FILTER (WHERE name = '{name}') AS {name}" for name in wanted
    )
    union = "\nUNION ALL\n".join(f"({part})" for part in parts)
    return f"SELECT {keys},\n  {pivoted}\nFROM ({union}) GROUP BY {keys}"
