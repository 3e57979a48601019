"""Words every table a person reads shares (the run summary, the report, `tracegrade sql`)."""

from __future__ import annotations

__all__ = ["NONE"]

NONE = "(none)"
"""The one spelling of a missing value (SQL NULL, a trace without a domain, an empty table)
wherever a person reads it; machine formats keep the value missing (an empty CSV field, null)."""
