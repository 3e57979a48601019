"""The summary's per-domain table from DuckDB equals Polars' to the last bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from storage.report.quantiles import quantiles_sql
from storage.report.summary import domain_table_sql
from storage.store.duckdb_store import DuckDBStore


def polars_domains(scores: pl.DataFrame) -> pl.DataFrame:
    """The table as the summary computed it in Polars before it moved into DuckDB."""
    return (
        scores.group_by(pl.col("task_domain").fill_null("(none)").alias("domain"))
        .agg(
            traces=pl.len().cast(pl.Int64),
            p10=pl.col("score").quantile(0.1, "linear"),
            median=pl.col("score").median(),
            p90=pl.col("score").quantile(0.9, "linear"),
            shareable=pl.col("shareable").mean(),
            shared=pl.col("shareable").sum().cast(pl.Int64),
        )
        .sort("domain")
    )


def random_scores(rng: np.random.Generator) -> pl.DataFrame:
    n = int(rng.integers(1, 300))
    values = rng.random(n)
    if rng.random() < 0.3:  # ties, as value scores rounded by their formulas have
        values = np.round(values, int(rng.integers(1, 3)))
    domains = rng.choice(np.array(["code", "math", "research", None], dtype=object), n)
    return pl.DataFrame(
        {"task_domain": domains.tolist(), "score": values, "shareable": rng.random(n) < 0.4},
        schema={"task_domain": pl.String, "score": pl.Float64, "shareable": pl.Boolean},
    )


def test_quantiles_and_rates_equal_polars_to_the_last_bit(db_path: Path) -> None:
    """DuckDB's `quantile_cont` alone differs from Polars in the last bit about once in seven
    (it interpolates another way); the summary's query must not."""
    rng = np.random.default_rng(23)
    sql = domain_table_sql("__scores")
    with DuckDBStore(db_path) as store:
        for _ in range(200):
            scores = random_scores(rng)
            ours = store.sql_with(sql, scores=scores).sort("domain")
            expected = polars_domains(scores)
            assert ours.columns == expected.columns
            assert ours["domain"].to_list() == expected["domain"].to_list()
            assert ours["traces"].to_list() == expected["traces"].to_list()
            assert ours["shared"].to_list() == expected["shared"].to_list()
            for column in ["p10", "median", "p90", "shareable"]:
                # bit-equal: `to_list` compares the floats themselves, not within a tolerance
                assert ours[column].to_list() == expected[column].to_list(), column


def test_the_report_s_quantiles_are_the_summary_s_over_two_groups_and_nulls(
    db_path: Path,
) -> None:
    """`quantiles_sql`, which the report's domain table and daily charts use: two group
    columns, two value columns, nulls left out, each quantile Polars' linear one bit for bit."""
    rng = np.random.default_rng(5)
    wanted = {"median_score": ("score", 0.5), "p90_score": ("score", 0.9), "mid": ("n", 0.5)}
    sql = quantiles_sql("__rows", ("day", "agent"), wanted)
    with DuckDBStore(db_path) as store:
        for _ in range(60):
            n = int(rng.integers(1, 200))
            novelty = rng.random(n)
            rows = pl.DataFrame(
                {
                    "day": rng.integers(0, 3, n),
                    "agent": rng.choice(np.array(["a", "b"]), n).tolist(),
                    "score": np.round(rng.random(n), 2),
                    "n": [None if x < 0.2 else float(x) for x in novelty],
                }
            )
            ours = store.sql_with(sql, rows=rows).sort("day", "agent")
            expected = (
                rows.group_by("day", "agent")
                .agg(
                    median_score=pl.col("score").quantile(0.5, "linear"),
                    p90_score=pl.col("score").quantile(0.9, "linear"),
                    mid=pl.col("n").drop_nulls().quantile(0.5, "linear"),
                )
                .sort("day", "agent")
            )
            assert ours.select("day", "agent").equals(expected.select("day", "agent"))
            for column in wanted:
                assert ours[column].to_list() == expected[column].to_list(), column
