"""The `[compare]` table of tracegrade.toml: how `tracegrade compare` pairs and gates."""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from transforms.config.base import StrictModel

__all__ = ["COLUMN_NAME", "CompareConfig"]

COLUMN_NAME = re.compile(r"^[A-Za-z_]\w*$")
"""A column `pair_by` (or `--pair-by`) may name: an identifier, never SQL."""


class CompareConfig(StrictModel):
    """`tracegrade compare`'s defaults; its flags override them (docs/compare.md)."""

    fail_on: list[str] = Field(default_factory=list)
    """Gate lines (`"score < -0.02"`, `"level.ESCALATE > 0.03"`); `--fail-on` replaces them."""
    pair_by: list[str] = Field(default_factory=lambda: ["objective"])
    """Columns that name a task; empty: never pair. `--pair-by` replaces them."""

    @field_validator("pair_by")
    @classmethod
    def _columns(cls, value: list[str]) -> list[str]:
        for column in value:
            if not COLUMN_NAME.match(column):
                raise ValueError(f"pair_by column {column!r} is not a column name")
        return value
