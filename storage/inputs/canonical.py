"""The canonical trace row shared by the JSON and Parquet readers.

Both readers build the same frame, and the content hash and timestamp parsing
live here once, so a trace read from JSONL and from Parquet hashes the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import polars as pl

from storage.store.hashing import sha256_expr
from transforms.trace_schema import HASHED, canonical_polars_schema, step_polars_dtype

__all__ = [
    "CANONICAL_SCHEMA",
    "STEP_DTYPE",
    "canonical_json",
    "content_hashes",
    "parse_created_at",
    "parse_timestamp",
]

STEP_DTYPE = step_polars_dtype()
"""One step of `steps` (`transforms.trace_schema.STEP`; docs/input-format.md)."""

CANONICAL_SCHEMA: dict[str, pl.DataType] = canonical_polars_schema()
"""Column names and types of every frame `read_traces` returns, in order
(`transforms.trace_schema.CANONICAL`, where each column is described)."""

_ISO_UTC = "%Y-%m-%dT%H:%M:%S%.6fZ"
_HASH_CHUNK_ROWS = 65_536
_FAST_DATE_TIME = r"^[1-8]\d{3}-\d{2}-\d{2}T\d{2}:\d{2}:[0-5]\d(\.\d{1,9})?"
_FAST_AWARE = _FAST_DATE_TIME + r"(Z|[+-]\d{2}:\d{2})$"
_FAST_NAIVE = _FAST_DATE_TIME + "$"
_AWARE_FORMAT = "%Y-%m-%dT%H:%M:%S%.f%#z"
_NAIVE_FORMAT = "%Y-%m-%dT%H:%M:%S%.f"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def parse_timestamp(raw: str) -> datetime | None:
    """Parse an ISO-8601 string to an aware UTC datetime, or None when it is not one.

    Naive values are taken as UTC, as the SDK writes them.
    """
    try:
        value = datetime.fromisoformat(raw.strip())
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)
    except (ValueError, OverflowError):
        return None


def _epoch_micros(raw: str) -> int | None:
    parsed = parse_timestamp(raw)
    return None if parsed is None else (parsed - _EPOCH) // _MICROSECOND


def parse_created_at(raw: pl.Series) -> pl.Series:
    """Parse a string column of ISO-8601 timestamps with `parse_timestamp`'s meaning.

    The common shape (`2024-05-01T12:00:00[.ffffff][Z|+hh:mm]`, years 1000 to
    8999) is parsed vectorized; any other text is parsed once per distinct
    value in Python. Returns a `Datetime("us", "UTC")` series aligned with
    `raw`; values that are not ISO-8601 become null.
    """
    text = raw.rename("raw").to_frame()
    fast = text.select(
        pl.when(pl.col("raw").str.contains(_FAST_AWARE))
        .then(pl.col("raw").str.to_datetime(_AWARE_FORMAT, strict=False, time_zone="UTC"))
        .when(pl.col("raw").str.contains(_FAST_NAIVE))
        .then(
            pl.col("raw").str.to_datetime(_NAIVE_FORMAT, strict=False).dt.replace_time_zone("UTC")
        )
        .cast(pl.Datetime("us", "UTC"))
    ).to_series()
    slow = raw.filter(fast.is_null() & raw.is_not_null()).unique()
    if slow.is_empty():
        return fast.rename("created_at")
    micros = pl.Series([_epoch_micros(value) for value in slow.to_list()], dtype=pl.Int64)
    lookup = pl.DataFrame(
        {"raw": slow, "parsed": micros.cast(pl.Datetime("us")).dt.replace_time_zone("UTC")}
    )
    joined = text.with_columns(fast=fast).join(lookup, on="raw", how="left", maintain_order="left")
    return joined.select(pl.coalesce("fast", "parsed").alias("created_at")).to_series()


def _content_chunks(frame: pl.DataFrame) -> Iterator[pl.DataFrame]:
    """The hashed fields (`transforms.trace_schema.HASHED`, in that order, `created_at` as ISO
    UTC text) in chunks of `_HASH_CHUNK_ROWS` rows, bounding the memory the encoded text takes."""
    content = frame.select(
        pl.col(name).dt.to_string(_ISO_UTC) if name == "created_at" else pl.col(name)
        for name in HASHED
    )
    for start in range(0, content.height, _HASH_CHUNK_ROWS):
        yield content.slice(start, _HASH_CHUNK_ROWS)


_ENCODED = pl.struct(pl.all()).struct.json_encode()


def canonical_json(frame: pl.DataFrame) -> Iterator[pl.Series]:
    """The canonical JSON of each row's trace content, a chunk at a time: one object with the
    fields of `transforms.trace_schema.HASHED` in that order, `created_at` as ISO UTC text
    (microseconds, `Z`) and `steps` as a list of step objects, so it does not depend on the
    file format read."""
    for chunk in _content_chunks(frame):
        yield chunk.select(_ENCODED).to_series()


def content_hashes(frame: pl.DataFrame) -> pl.Series:
    """SHA-256 hex of each row's canonical JSON (`canonical_json`), encoded and hashed
    column-wise by Polars, a chunk at a time (`storage.store.hashing.sha256_expr`: no Python
    call per row; docs/performance.md)."""
    hashes = [
        chunk.select(sha256_expr(_ENCODED).alias("content_hash")).to_series()
        for chunk in _content_chunks(frame)
    ]
    if not hashes:
        return pl.Series("content_hash", [], dtype=pl.String)
    return pl.concat(hashes)
