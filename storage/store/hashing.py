"""Stable content hashes (SHA-256, hex): the same on every machine and library version."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Polars loads where a column is hashed: hashing a file needs none
    import polars as pl

__all__ = ["embedding_keys", "file_sha256", "sha256_hex"]


def sha256_hex(values: pl.Series) -> pl.Series:
    """SHA-256 of each UTF-8 string."""
    import polars as pl

    return pl.Series(
        values.name,
        [hashlib.sha256(data).hexdigest() for data in values.cast(pl.Binary).to_list()],
        dtype=pl.String,
    )


def embedding_keys(model_key: str, text_shas: Iterable[str]) -> pl.Series:
    """Key of a vector: a hash of the model identity and of the text's own hash."""
    import polars as pl

    prefix = model_key.encode() + b"\0"
    return pl.Series(
        "embedding_key",
        [hashlib.sha256(prefix + sha.encode()).hexdigest() for sha in text_shas],
        dtype=pl.String,
    )


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()
