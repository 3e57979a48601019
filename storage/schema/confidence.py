"""The confidence tables (documented in docs/confidence.md)."""

from __future__ import annotations

__all__ = ["CONFIDENCE_MIGRATION_V2_SQL", "CONFIDENCE_SCHEMA_SQL", "newest_levels"]


def newest_levels(levels: str, table: str = "confidence_traces", one_source: bool = False) -> str:
    """Each trace's newest level (of any source) among the rows `levels` selects from `table`
    (`confidence_traces`, or a part of it): the newest source per trace, then its one row
    ((trace_id, source) is unique). Taking level, reason and aggregate each by `arg_max` kept
    every reason in the aggregate's memory, which ran out of the store's 512 MB at
    10,000,000 traces. `one_source`: the database holds levels of at most one source, so a
    trace has at most one row, its newest, and the rows are taken as they are (the grouping
    of every trace by id took a quarter of a comparison of 10,000,000 traces)."""
    if one_source:
        return f"(SELECT trace_id, level, reason, aggregate FROM {levels})"
    return (
        f"(SELECT trace_id, c.level, c.reason, c.aggregate FROM {table} c JOIN "
        f"(SELECT trace_id, arg_max(source, computed_at) AS source FROM {levels} "
        "GROUP BY trace_id) USING (trace_id, source))"
    )


CONFIDENCE_STEP_COLUMNS = """
    trace_id VARCHAR NOT NULL,
    source VARCHAR NOT NULL,
    step_index BIGINT NOT NULL,
    step_kind VARCHAR NOT NULL,
    source_step_id BIGINT,
    search_result_count BIGINT NOT NULL,
    search_avg_score DOUBLE NOT NULL,
    search_max_score DOUBLE NOT NULL,
    search_score_variance DOUBLE NOT NULL,
    source_agreement DOUBLE NOT NULL,
    source_count BIGINT NOT NULL,
    llm_self_confidence DOUBLE NOT NULL,
    tool_success_rate DOUBLE NOT NULL,
    tool_execution_count BIGINT NOT NULL,
    tool_success_count BIGINT NOT NULL,
    query_coverage DOUBLE NOT NULL,
    is_search_step BOOLEAN NOT NULL,
    search_quality DOUBLE NOT NULL,
    tool_success DOUBLE NOT NULL,
    w_search_quality DOUBLE NOT NULL,
    w_tool_success DOUBLE NOT NULL,
    w_source_agreement DOUBLE NOT NULL,
    w_llm_self_eval DOUBLE NOT NULL,
    w_query_coverage DOUBLE NOT NULL,
    base DOUBLE NOT NULL,
    penalties VARCHAR[] NOT NULL,
    score DOUBLE NOT NULL,
    llm_self_eval_fallback BOOLEAN,
    query_coverage_fallback BOOLEAN,
    run_id VARCHAR NOT NULL,
    computed_at TIMESTAMPTZ NOT NULL
"""
"""One plan step: its keys, GRACE's factors, the sub-scores and weights, base, penalties, score."""

CONFIDENCE_SCHEMA_SQL = f"""
CREATE TABLE IF NOT EXISTS confidence_step_rows ({CONFIDENCE_STEP_COLUMNS});
CREATE TABLE IF NOT EXISTS confidence_trace_rows (
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
CREATE OR REPLACE VIEW confidence_steps AS SELECT * FROM confidence_step_rows
WHERE run_id IN (SELECT run_id FROM runs WHERE levels_published_at IS NOT NULL);
CREATE OR REPLACE VIEW confidence_traces AS SELECT * FROM confidence_trace_rows
WHERE run_id IN (SELECT run_id FROM runs WHERE levels_published_at IS NOT NULL);
"""

CONFIDENCE_MIGRATION_V2_SQL = """
DROP TABLE IF EXISTS confidence_steps;
DELETE FROM confidence_traces;
"""
"""Schema 1 -> 2: the steps of the calculator before GRACE's factors (issue 21) go, and so do
the levels it made; the next derived run gives every stored trace its level again."""
