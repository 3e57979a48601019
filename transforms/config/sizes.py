"""Sizes the configuration's defaults share with the storage layer, in a module light enough
for every command to import (the configuration models import pydantic)."""

from __future__ import annotations

__all__ = ["DUCKDB_ROW_GROUP_ROWS"]

DUCKDB_ROW_GROUP_ROWS = 122_880
"""DuckDB's row group: the rows it compresses and writes to a table's file as one unit; commits
append whole ones."""
