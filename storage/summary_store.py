"""The run summary's per-domain table, computed inside DuckDB over the run's stored scores.

A run of 10,000,000 traces would otherwise read every score into Polars for a table of a few
rows. The quantiles are Polars' "linear" ones to the last bit, as the summary always showed
them: DuckDB's own `quantile_cont` interpolates as `lo * (1 - d) + hi * d`, Polars as
`lo + (hi - lo) * d`, and the two differ in the last bit about once in seven. So the query
ranks each domain's scores, picks the two neighbours of each quantile's position
`(n - 1) * q`, and interpolates them the way Polars does.
"""

from __future__ import annotations

import polars as pl

from storage.duckdb_store import DuckDBStore

__all__ = ["QUANTILES", "domain_table_sql", "run_domains"]

QUANTILES = {"p10": 0.1, "median": 0.5, "p90": 0.9}
"""The summary's quantile columns and where they sit."""

DOMAIN_TABLE_SQL = """
WITH s AS (
  SELECT coalesce(task_domain, '(none)') AS domain, score, shareable FROM {source}
), counts AS (
  SELECT domain, count(*) AS traces, avg(shareable::INTEGER) AS shareable,
    count(*) FILTER (WHERE shareable) AS shared
  FROM s GROUP BY domain
), wanted(name, q) AS (
  VALUES {quantiles}
), positions AS (
  SELECT domain, name, (traces - 1)::DOUBLE * q AS rn FROM counts, wanted
), places AS (
  SELECT DISTINCT domain, unnest([floor(rn), ceil(rn)])::BIGINT AS i FROM positions
), ranked AS (
  SELECT domain, score, row_number() OVER (PARTITION BY domain ORDER BY score) - 1 AS i
  FROM s
), picked AS (
  SELECT domain, i, score FROM ranked SEMI JOIN places USING (domain, i)
), interpolated AS (
  SELECT p.domain, p.name,
    CASE WHEN lo.i = hi.i THEN lo.score
      ELSE lo.score + (hi.score - lo.score) * (p.rn - floor(p.rn)) END AS value
  FROM positions p
  JOIN picked lo ON lo.domain = p.domain AND lo.i = floor(p.rn)::BIGINT
  JOIN picked hi ON hi.domain = p.domain AND hi.i = ceil(p.rn)::BIGINT
)
SELECT c.domain, c.traces,
  {columns},
  c.shareable, c.shared
FROM counts c LEFT JOIN interpolated i USING (domain)
GROUP BY c.domain, c.traces, c.shareable, c.shared
"""
"""Per domain (a null task_domain is "(none)"): traces, the quantiles of QUANTILES, the
shareable rate and the shareable count, over the rows of `{source}` (task_domain, score,
shareable). Scores are never null (`score_rows.score` is NOT NULL), so every row counts."""


def domain_table_sql(source: str) -> str:
    """DOMAIN_TABLE_SQL over the relation `source`."""
    quantiles = ", ".join(f"('{name}', {q!r}::DOUBLE)" for name, q in QUANTILES.items())
    columns = ",\n  ".join(
        f"any_value(i.value) FILTER (WHERE i.name = '{name}') AS {name}" for name in QUANTILES
    )
    return DOMAIN_TABLE_SQL.format(source=source, quantiles=quantiles, columns=columns)


def run_domains(store: DuckDBStore, run_ids: list[str]) -> pl.DataFrame:
    """The per-domain table of the scores the runs `run_ids` wrote (scores.run_id), sorted by
    domain: domain, traces, p10, median, p90, shareable (the rate) and shared (the count)."""
    source = "(SELECT task_domain, score, shareable FROM scores WHERE list_contains(?, run_id))"
    return store.sql(domain_table_sql(source), [run_ids]).sort("domain")
