"""Every table and view of a tracegrade database, created together when a writer opens the
file (never on a read path). One module per capability; docs/storage.md documents them.
"""

from __future__ import annotations

from storage.schema.confidence import CONFIDENCE_MIGRATION_V2_SQL, CONFIDENCE_SCHEMA_SQL
from storage.schema.judge import JUDGE_SCHEMA_SQL
from storage.schema.latest import LATEST_MIGRATION_V8_SQL, LATEST_SCHEMA_SQL
from storage.schema.operations import OPERATIONS_SCHEMA_SQL
from storage.schema.phoenix import PHOENIX_SCHEMA_SQL
from storage.schema.scoring import (
    SCORING_MIGRATION_V3_SQL,
    SCORING_MIGRATION_V4_SQL,
    SCORING_MIGRATION_V5_SQL,
    SCORING_MIGRATION_V6_SQL,
    SCORING_MIGRATION_V7_SQL,
    SCORING_SCHEMA_SQL,
    STEP_TYPE_SQL,
)

__all__ = ["MIGRATIONS", "SCHEMA_SQL", "SCHEMA_VERSION", "STEP_TYPE_SQL"]

SCHEMA_VERSION = 8

SCHEMA_SQL = (
    SCORING_SCHEMA_SQL
    + CONFIDENCE_SCHEMA_SQL
    + JUDGE_SCHEMA_SQL
    + OPERATIONS_SCHEMA_SQL
    + PHOENIX_SCHEMA_SQL
    + LATEST_SCHEMA_SQL
)
"""The whole database; every statement is CREATE ... IF NOT EXISTS or CREATE OR REPLACE VIEW."""

MIGRATIONS = {
    2: CONFIDENCE_MIGRATION_V2_SQL,
    3: SCORING_MIGRATION_V3_SQL,
    4: SCORING_MIGRATION_V4_SQL,
    5: SCORING_MIGRATION_V5_SQL,
    6: SCORING_MIGRATION_V6_SQL,
    7: SCORING_MIGRATION_V7_SQL,
    8: LATEST_MIGRATION_V8_SQL,
}
"""SQL that brings a database stamped with version v - 1 to version v, before SCHEMA_SQL
creates what the migration dropped."""
