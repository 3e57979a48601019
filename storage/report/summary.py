"""The run summary's per-domain table, computed inside DuckDB over the run's stored scores.

A run of 10,000,000 traces would otherwise read every score into Polars for a table of a few
rows. The quantiles are Polars' "linear" ones to the last bit, as the summary always showed
them (`storage.report.quantiles`, the quantile of every figure tracegrade shows).
"""

from __future__ import annotations

import polars as pl

from storage.report.quantiles import quantiles_sql
from storage.store.duckdb_store import DuckDBStore

__all__ = ["domain_table_sql", "run_domains"]

QUANTILES = {"p10": 0.1, "median": 0.5, "p90": 0.9}
"""The summary's quantile columns and where they sit."""


def domain_table_sql(source: str) -> str:
    """Per domain (a null task_domain is "(none)"): traces, the quantiles of QUANTILES, the
    shareable rate and the shareable count, over the rows of the relation `source`
    (task_domain, score, shareable). Scores are never null (`score_rows.score` is NOT NULL),
    so every row counts."""
    wanted = {name: ("score", q) for name, q in QUANTILES.items()}
    return f"""
WITH s AS (
  SELECT coalesce(task_domain, '(none)') AS domain, score, shareable FROM {source}
), counts AS (
  SELECT domain, count(*) AS traces, avg(shareable::INTEGER) AS shareable,
    count(*) FILTER (WHERE shareable) AS shared
  FROM s GROUP BY domain
), q AS (
  {quantiles_sql("s", ["domain"], wanted)}
)
SELECT c.domain, c.traces, {", ".join(f"q.{name}" for name in QUANTILES)}, c.shareable, c.shared
FROM counts c LEFT JOIN q USING (domain)
"""


def run_domains(store: DuckDBStore, run_ids: list[str]) -> pl.DataFrame:
    """The per-domain table of the scores the runs `run_ids` wrote (scores.run_id), sorted by
    domain: domain, traces, p10, median, p90, shareable (the rate) and shared (the count)."""
    source = "(SELECT task_domain, score, shareable FROM scores WHERE list_contains(?, run_id))"
    return store.sql(domain_table_sql(source), [run_ids]).sort("domain")
