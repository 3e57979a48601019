"""The confidence tables (documented in docs/confidence.md)."""

from __future__ import annotations

__all__ = ["CONFIDENCE_SCHEMA_SQL"]

_FACTOR_COLUMNS = """
    search_quality DOUBLE,
    tool_success DOUBLE,
    source_agreement DOUBLE,
    llm_self_eval DOUBLE,
    query_coverage DOUBLE,
    w_search_quality DOUBLE NOT NULL,
    w_tool_success DOUBLE NOT NULL,
    w_source_agreement DOUBLE NOT NULL,
    w_llm_self_eval DOUBLE NOT NULL,
    w_query_coverage DOUBLE NOT NULL,"""

CONFIDENCE_SCHEMA_SQL = f"""
CREATE TABLE IF NOT EXISTS confidence_steps (
    trace_id VARCHAR NOT NULL,
    source VARCHAR NOT NULL,
    step_index BIGINT NOT NULL,
    step_kind VARCHAR NOT NULL,
    source_step_id BIGINT,
    is_search_step BOOLEAN NOT NULL,
    search_result_count BIGINT,
    tool_calls BIGINT NOT NULL,
    tool_successes BIGINT NOT NULL,
    source_count BIGINT,{_FACTOR_COLUMNS}
    base DOUBLE NOT NULL,
    penalty DOUBLE NOT NULL,
    penalties VARCHAR[] NOT NULL,
    score DOUBLE NOT NULL,
    llm_self_eval_fallback BOOLEAN,
    query_coverage_fallback BOOLEAN,
    run_id VARCHAR NOT NULL,
    computed_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE IF NOT EXISTS confidence_traces (
    trace_id VARCHAR NOT NULL,
    source VARCHAR NOT NULL,
    input_hash VARCHAR NOT NULL,
    config_hash VARCHAR NOT NULL,
    steps INTEGER NOT NULL,
    aggregate DOUBLE NOT NULL,
    method VARCHAR NOT NULL,
    level VARCHAR NOT NULL,
    reason VARCHAR NOT NULL,
    recommended_action VARCHAR NOT NULL,
    penalties VARCHAR[] NOT NULL,
    run_id VARCHAR NOT NULL,
    computed_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE IF NOT EXISTS confidence_quarantine (
    run_id VARCHAR NOT NULL,
    file VARCHAR NOT NULL,
    file_hash VARCHAR NOT NULL,
    row_number BIGINT,
    trace_id VARCHAR,
    step_index BIGINT,
    rule VARCHAR NOT NULL,
    reason VARCHAR NOT NULL
);
"""
