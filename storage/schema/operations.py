"""The operation scorer tables and views (documented in docs/operations.md)."""

from __future__ import annotations

__all__ = ["OPERATIONS_SCHEMA_SQL"]

OPERATIONS_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS operation_cases (
    run_id VARCHAR NOT NULL,
    run_seq BIGINT NOT NULL,
    case_id VARCHAR NOT NULL,
    scorer_set VARCHAR NOT NULL,
    set_hash VARCHAR NOT NULL,
    case_hash VARCHAR NOT NULL,
    source_file VARCHAR NOT NULL,
    row_number BIGINT NOT NULL,
    weighted_average DOUBLE NOT NULL,
    passed BOOLEAN NOT NULL,
    failed_scorers VARCHAR[] NOT NULL,
    error VARCHAR
);
CREATE TABLE IF NOT EXISTS operation_scores (
    run_id VARCHAR NOT NULL,
    run_seq BIGINT NOT NULL,
    case_id VARCHAR NOT NULL,
    scorer_set VARCHAR NOT NULL,
    scorer VARCHAR NOT NULL,
    score DOUBLE NOT NULL,
    threshold DOUBLE NOT NULL,
    passed BOOLEAN NOT NULL,
    weight DOUBLE NOT NULL,
    details JSON NOT NULL
);
CREATE TABLE IF NOT EXISTS operation_quarantine (
    run_id VARCHAR NOT NULL,
    file VARCHAR NOT NULL,
    file_hash VARCHAR NOT NULL,
    row_number BIGINT,
    case_id VARCHAR,
    rule VARCHAR NOT NULL,
    reason VARCHAR NOT NULL
);
CREATE TABLE IF NOT EXISTS operation_files (
    path VARCHAR NOT NULL,
    content_hash VARCHAR NOT NULL,
    size BIGINT NOT NULL,
    cases BIGINT NOT NULL,
    run_id VARCHAR NOT NULL
);
CREATE OR REPLACE VIEW latest_operation_cases AS
SELECT * EXCLUDE (row_rank) FROM (
    SELECT *, row_number() OVER (
        PARTITION BY case_id, scorer_set ORDER BY run_seq DESC
    ) AS row_rank
    FROM operation_cases
) WHERE row_rank = 1;
CREATE OR REPLACE VIEW latest_operation_scores AS
SELECT s.* FROM operation_scores s
SEMI JOIN latest_operation_cases c USING (run_id, case_id, scorer_set);
"""
