"""The tables of Phoenix pulls and pushes (documented in docs/phoenix.md)."""

from __future__ import annotations

__all__ = ["PHOENIX_SCHEMA_SQL"]

PHOENIX_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS phoenix_spans (
    source VARCHAR NOT NULL,
    span_rowid BIGINT NOT NULL,
    trace_hex VARCHAR NOT NULL,
    span_hex VARCHAR NOT NULL,
    parent_hex VARCHAR,
    span_kind VARCHAR,
    end_time TIMESTAMP WITH TIME ZONE NOT NULL,
    span JSON NOT NULL,
    pulled_at TIMESTAMP WITH TIME ZONE NOT NULL,
    delivered_at TIMESTAMP WITH TIME ZONE
);
CREATE TABLE IF NOT EXISTS phoenix_pulls (
    source VARCHAR NOT NULL,
    high_water BIGINT NOT NULL,
    pending_top BIGINT,
    pending_cursor VARCHAR,
    updated_at TIMESTAMP WITH TIME ZONE NOT NULL
);
CREATE TABLE IF NOT EXISTS phoenix_annotations (
    source VARCHAR NOT NULL,
    span_hex VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    payload_sha VARCHAR NOT NULL,
    pushed_at TIMESTAMP WITH TIME ZONE NOT NULL
);
"""
