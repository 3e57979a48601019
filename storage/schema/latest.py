"""Each published trace's newest row, kept by the publications for the comparison (documented
in docs/storage.md)."""

from __future__ import annotations

from storage.schema.confidence import newest_levels

__all__ = [
    "LATEST_MIGRATION_V8_SQL",
    "LATEST_SCHEMA_SQL",
    "LATEST_TRACE_ROWS",
    "METRIC_COLUMNS",
    "PENDING",
    "SCORE_METRICS",
    "latest_rows_select",
]

LATEST_TRACE_ROWS = "latest_trace_rows"
"""The table: one row a published trace, what a comparison reads of it (storage/compare)."""

SCORE_METRICS = ("score", "complexity", "novelty", "tool_diversity", "outcome_confidence")
"""The newest score's columns the table keeps: the value score and its factors
(`transforms.config.scoring.FACTORS`, which loads pydantic: a run without a judge does not;
tests/store/test_latest_rows.py holds the two together)."""

METRIC_COLUMNS = ("aggregate", *SCORE_METRICS)
"""The table's columns that the comparison reads as metrics, not as columns a selection
sees: the newest level's aggregate and the newest score's."""

PENDING = "latest_rows_pending"
"""The `meta` key of a run whose published rows the table does not show yet (one row a run):
a scoring run's publication adds it, the publication of its levels (or `fold_pending` at the
end of the run) folds its traces in. The table is current when no such row is left
(`storage/store/latest_rows.py`)."""


def latest_rows_select(condition: str) -> str:
    """Each published trace (of the traces whose id `condition`, SQL on `trace_id`, holds) once:
    its columns but its steps and run id, the run_seq of the run that stored it, its newest
    level (of any source) and that level's aggregate, and its newest score and factors; the
    rows the comparison's joined read makes (storage/compare/_sql.py), made once when they
    are published rather than at every comparison."""
    levels = f"(SELECT * FROM confidence_traces WHERE {condition})"
    scores = ", ".join(f"s.{name}" for name in SCORE_METRICS)
    return f"""
SELECT t.* EXCLUDE (steps, run_id), r.run_seq, lv.level, lv.aggregate, {scores}
FROM (SELECT * FROM latest_scores WHERE {condition}) s
JOIN (SELECT * FROM traces WHERE {condition}) t USING (trace_id, content_hash)
LEFT JOIN runs r ON r.run_id = t.run_id
LEFT JOIN {newest_levels(levels, levels)} lv USING (trace_id)"""


LATEST_SCHEMA_SQL = f"""
CREATE TABLE IF NOT EXISTS {LATEST_TRACE_ROWS} AS {latest_rows_select("false")};
"""
"""Created empty, with the columns its query gives; after the scoring and confidence tables."""

LATEST_MIGRATION_V8_SQL = f"""
INSERT INTO meta SELECT '{PENDING}', run_id FROM runs
WHERE published_at IS NOT NULL OR levels_published_at IS NOT NULL;
"""
"""Version 8: `latest_trace_rows` (created after this by SCHEMA_SQL, empty) is filled by the
next publication, which folds every run published so far; until then the comparison joins
the stored rows as before."""
