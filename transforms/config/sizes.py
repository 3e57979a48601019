"""Sizes the configuration's defaults share with the storage layer, in a module light enough
for every command to import (the configuration models import pydantic)."""

from __future__ import annotations

__all__ = ["DUCKDB_ROW_GROUP_ROWS", "WRITE_ROW_GROUP_ROWS"]

DUCKDB_ROW_GROUP_ROWS = 122_880
"""DuckDB's row group: the rows it compresses and writes to a table's file as one unit; commits
append whole ones."""

WRITE_ROW_GROUP_ROWS = DUCKDB_ROW_GROUP_ROWS // 4
"""The row group a run writes a DuckDB file in (ATTACH's ROW_GROUP_SIZE), and the rows it
commits per transaction by default: a quarter of DuckDB's, so that a batch of realistic traces
commits in about 1-1.5 s and the run can let readers in every few seconds, for the same total
write time (whole row groups go to the file as they are written; fewer rows would go through
the write-ahead log and be copied again). Files written with other row groups read the same."""
