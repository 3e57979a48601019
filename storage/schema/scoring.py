"""The trace scoring tables and views (documented in docs/storage.md)."""

from __future__ import annotations

from transforms.trace_schema import HASHED, STEP_TYPE_SQL, sql_columns

__all__ = [
    "SCORING_MIGRATION_V3_SQL",
    "SCORING_MIGRATION_V4_SQL",
    "SCORING_MIGRATION_V5_SQL",
    "SCORING_MIGRATION_V6_SQL",
    "SCORING_MIGRATION_V7_SQL",
    "SCORING_SCHEMA_SQL",
    "STEP_TYPE_SQL",
    "latest_scores_select",
    "newest_score_rows",
]


def latest_scores_select(scores: str) -> str:
    """The query of `latest_scores` over the score history `scores`: the newest row (highest
    run_seq) of each trace."""
    return (
        "SELECT * EXCLUDE (row_rank) FROM (\n"
        "    SELECT *, row_number() OVER (PARTITION BY trace_id ORDER BY run_seq DESC) AS row_rank\n"
        f"    FROM {scores}\n"
        ") WHERE row_rank = 1"
    )


def newest_score_rows(scores: str) -> str:
    """The rows `latest_scores` shows, from the score history `scores` (a table, or a query in
    parentheses), found by joining each trace's newest run_seq (a run scores a trace once, so
    it names one row): unlike the view's ranking, this holds no row's other columns while it
    looks, which at 1,000,000 traces on a DuckLake ran out of the store's 256 MB."""
    return (
        f"{scores} JOIN (SELECT trace_id, max(run_seq) AS run_seq FROM {scores} "
        "GROUP BY trace_id) USING (trace_id, run_seq)"
    )


_SCORE_COLUMNS = """
    trace_id VARCHAR NOT NULL,
    run_id VARCHAR NOT NULL,
    run_seq BIGINT NOT NULL,
    content_hash VARCHAR NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    agent_id VARCHAR,
    task_domain VARCHAR,
    scope_key VARCHAR NOT NULL,
    profile VARCHAR NOT NULL,
    n_steps INTEGER NOT NULL,
    unique_types INTEGER NOT NULL,
    error_recovery INTEGER NOT NULL,
    unique_tools INTEGER NOT NULL,
    complexity DOUBLE NOT NULL,
    novelty DOUBLE NOT NULL,
    tool_diversity DOUBLE NOT NULL,
    outcome_confidence DOUBLE NOT NULL,
    w_complexity DOUBLE NOT NULL,
    w_novelty DOUBLE NOT NULL,
    w_tool_diversity DOUBLE NOT NULL,
    w_outcome_confidence DOUBLE NOT NULL,
    score DOUBLE NOT NULL,
    overrides VARCHAR[] NOT NULL,
    novelty_source VARCHAR NOT NULL,
    novelty_window INTEGER NOT NULL,
    shareable BOOLEAN NOT NULL,
    config_hash VARCHAR NOT NULL"""
"""The columns of a score row: `score_rows` (every run's) and `latest_score_rows` (each
trace's newest) hold the same."""

_PUBLISHED = "run_id IN (SELECT run_id FROM runs WHERE published_at IS NOT NULL)"
"""The rows of published runs: what the views `traces`, `scores` and `latest_scores` show."""

_PUBLISHED_SCORES = f"(SELECT * FROM score_rows WHERE {_PUBLISHED})"

LATEST_SCORE_ROWS_SQL = f"""
CREATE TABLE IF NOT EXISTS latest_score_rows (
{_SCORE_COLUMNS}
);
"""
"""Each trace's newest score row, kept by the runs (storage/store/commit.py): a run writes its
score rows here too, unpublished, and its publication deletes the published rows its traces
supersede, so `latest_scores` reads one row a trace with no window over the history (at
10,000,000 traces a grouping query took 2.49 s through the window, 0.13 s over a flat table;
docs/performance.md)."""


_TRACE_ROWS_KEY = sql_columns(("trace_id", "content_hash"))
_TRACE_ROWS_CONTENT = sql_columns(name for name in HASHED if name != "trace_id")
_TRACE_ROWS_SOURCE = sql_columns(("source_file", "row_number"))
"""`trace_rows` holds a trace's content (the fields its content hash covers, with the types
and nullability of `transforms.trace_schema.CANONICAL`) under its id and hash, and where it
was read from."""

SCORING_SCHEMA_SQL = f"""
CREATE TABLE IF NOT EXISTS meta (
    key VARCHAR NOT NULL,
    value VARCHAR NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR NOT NULL,
    run_seq BIGINT NOT NULL,
    flow VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    started_at TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ,
    tracegrade_version VARCHAR,
    embedding_model VARCHAR,
    config_hash VARCHAR,
    config_json VARCHAR,
    files_read INTEGER,
    files_skipped INTEGER,
    files_quarantined INTEGER,
    rows_read BIGINT,
    rows_scored BIGINT,
    rows_quarantined BIGINT,
    rows_new BIGINT,
    rows_changed BIGINT,
    rows_unchanged BIGINT,
    rows_rescored BIGINT,
    texts_embedded BIGINT,
    texts_cached BIGINT,
    rows_out_of_range BIGINT,
    rows_late BIGINT,
    published_at TIMESTAMPTZ,
    levels_published_at TIMESTAMPTZ,
    timings JSON,
    error VARCHAR,
    summary VARCHAR
);
CREATE TABLE IF NOT EXISTS files (
    path VARCHAR NOT NULL,
    content_hash VARCHAR NOT NULL,
    size BIGINT NOT NULL,
    status VARCHAR NOT NULL,
    rule VARCHAR,
    reason VARCHAR,
    rows_read BIGINT NOT NULL,
    rows_scored BIGINT NOT NULL,
    rows_quarantined BIGINT NOT NULL,
    rows_out_of_range BIGINT NOT NULL DEFAULT 0,
    run_id VARCHAR NOT NULL
);
CREATE TABLE IF NOT EXISTS trace_rows (
{_TRACE_ROWS_KEY}
{_TRACE_ROWS_CONTENT}
    text_sha VARCHAR NOT NULL,
{_TRACE_ROWS_SOURCE}
    run_id VARCHAR NOT NULL,
    agent_version VARCHAR,
    tags VARCHAR[]
);
CREATE TABLE IF NOT EXISTS embeddings (
    embedding_key VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    dimensions INTEGER NOT NULL,
    vector FLOAT[] NOT NULL,
    run_id VARCHAR
);
CREATE TABLE IF NOT EXISTS score_rows (
{_SCORE_COLUMNS}
);
CREATE TABLE IF NOT EXISTS quarantine (
    run_id VARCHAR NOT NULL,
    file VARCHAR NOT NULL,
    file_hash VARCHAR NOT NULL,
    row_number BIGINT,
    trace_id VARCHAR,
    rule VARCHAR NOT NULL,
    reason VARCHAR NOT NULL
);
CREATE TABLE IF NOT EXISTS open_spans (
    trace_hex VARCHAR NOT NULL,
    last_ns BIGINT NOT NULL,
    run_id VARCHAR NOT NULL,
    kept_at TIMESTAMPTZ NOT NULL,
    span JSON NOT NULL
);
CREATE OR REPLACE VIEW traces AS
SELECT * FROM trace_rows WHERE {_PUBLISHED};
CREATE OR REPLACE VIEW scores AS
SELECT * FROM score_rows WHERE {_PUBLISHED};
{LATEST_SCORE_ROWS_SQL}
CREATE OR REPLACE VIEW latest_scores AS
SELECT * FROM latest_score_rows WHERE {_PUBLISHED};
"""

SCORING_MIGRATION_V3_SQL = """
ALTER TABLE runs ADD COLUMN IF NOT EXISTS published_at TIMESTAMPTZ;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS levels_published_at TIMESTAMPTZ;
UPDATE runs SET published_at = coalesce(finished_at, started_at),
    levels_published_at = coalesce(finished_at, started_at);
DROP VIEW IF EXISTS latest_scores;
ALTER TABLE traces RENAME TO trace_rows;
ALTER TABLE scores RENAME TO score_rows;
ALTER TABLE IF EXISTS confidence_steps RENAME TO confidence_step_rows;
ALTER TABLE confidence_traces RENAME TO confidence_trace_rows;
"""
"""Schema 2 -> 3: a run writes its rows in batches to `trace_rows` and `score_rows` and
publishes them in one last commit (`runs.published_at`), and its confidence levels likewise
(`confidence_trace_rows`, `confidence_step_rows`, `runs.levels_published_at`); the views of
the old names show published runs only. Every run before it committed in one transaction, so
all of them are published. (A schema 1 file has no confidence_steps here: step 2 dropped it.)"""

SCORING_MIGRATION_V4_SQL = """
ALTER TABLE trace_rows ALTER COLUMN success DROP NOT NULL;
"""
"""Version 4: `success` may be null, where the producer recorded no outcome (SPEC 1)."""

SCORING_MIGRATION_V5_SQL = """
ALTER TABLE trace_rows ADD COLUMN IF NOT EXISTS agent_version VARCHAR;
"""
"""Version 5: the version of the agent that wrote a trace, as its producer tagged it (null for
the traces stored before)."""

SCORING_MIGRATION_V6_SQL = """
ALTER TABLE trace_rows ADD COLUMN IF NOT EXISTS tags VARCHAR[];
"""
"""Version 6: the labels a trace's producer gave it (Langfuse tags, OpenInference `tag.tags`,
a trace file's `metadata.tags`); null for the traces stored before."""

SCORING_MIGRATION_V7_SQL = f"""
{LATEST_SCORE_ROWS_SQL}
DELETE FROM latest_score_rows;
INSERT INTO latest_score_rows {latest_scores_select(_PUBLISHED_SCORES)};
"""
"""Version 7: `latest_scores` reads the table `latest_score_rows`, filled once here from the
published score history (as the view before it computed it); the runs keep it since."""
