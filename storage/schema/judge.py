"""The judge tables and views (documented in docs/judge.md)."""

from __future__ import annotations

__all__ = ["JUDGE_SCHEMA_SQL"]

JUDGE_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS judge_results (
    run_id VARCHAR NOT NULL,
    run_seq BIGINT NOT NULL,
    item_id VARCHAR NOT NULL,
    source VARCHAR NOT NULL,
    metric VARCHAR NOT NULL,
    cache_key VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    score DOUBLE,
    comment VARCHAR,
    error VARCHAR,
    model VARCHAR,
    prompt_version VARCHAR NOT NULL,
    parameters JSON NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    latency_ms DOUBLE NOT NULL,
    attempts INTEGER NOT NULL,
    cost_usd DOUBLE,
    mode VARCHAR NOT NULL,
    config_hash VARCHAR NOT NULL,
    judged_at TIMESTAMPTZ NOT NULL,
    shared_from VARCHAR
);
ALTER TABLE judge_results ADD COLUMN IF NOT EXISTS shared_from VARCHAR;
CREATE TABLE IF NOT EXISTS judge_scores (
    run_id VARCHAR NOT NULL,
    run_seq BIGINT NOT NULL,
    item_id VARCHAR NOT NULL,
    source VARCHAR NOT NULL,
    score_key VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    overall_score DOUBLE,
    failed_metrics VARCHAR[] NOT NULL,
    error VARCHAR,
    config_hash VARCHAR NOT NULL,
    judged_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE IF NOT EXISTS judge_batches (
    batch_id VARCHAR NOT NULL,
    run_id VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    handle JSON NOT NULL,
    requests JSON NOT NULL,
    status VARCHAR NOT NULL,
    submitted_at TIMESTAMPTZ NOT NULL,
    collected_at TIMESTAMPTZ
);
CREATE OR REPLACE VIEW latest_judge_results AS
SELECT * EXCLUDE (row_rank) FROM (
    SELECT *, row_number() OVER (
        PARTITION BY item_id, metric ORDER BY run_seq DESC, judged_at DESC) AS row_rank
    FROM judge_results
) WHERE row_rank = 1;
CREATE OR REPLACE VIEW latest_judge_scores AS
SELECT * EXCLUDE (row_rank) FROM (
    SELECT *, row_number() OVER (
        PARTITION BY item_id ORDER BY run_seq DESC, judged_at DESC) AS row_rank
    FROM judge_scores
) WHERE row_rank = 1;
"""
