"""What the HTML report and the run summaries read: the report's aggregates, the per-domain summary, the one exact quantile, and the scores as date-partitioned Parquet."""
