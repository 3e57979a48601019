"""Stable content hashes (SHA-256, hex): the same on every machine and library version."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Polars loads where a column is hashed: hashing a file needs none
    import polars as pl

__all__ = ["embedding_keys", "file_sha256", "sha256_expr", "sha256_hex"]


def sha256_expr(texts: pl.Expr) -> pl.Expr:
    """SHA-256 hex of each UTF-8 string (or bytes) of `texts`, computed column-wise by the
    polars-hash plugin (Rust's `sha2`, which uses the CPU's SHA instructions where it has them):
    no Python call per row, and Polars lets go of the GIL while it hashes. The digests are
    hashlib's (tests/store/test_hashing.py)."""
    from polars_hash import CryptographicHashingNameSpace

    return CryptographicHashingNameSpace(texts).sha2_256()


def sha256_hex(values: pl.Series) -> pl.Series:
    """SHA-256 of each UTF-8 string."""
    import polars as pl

    return values.to_frame().select(sha256_expr(pl.col(values.name))).to_series()


def embedding_keys(model_key: str, text_shas: Iterable[str]) -> pl.Series:
    """Key of a vector: a hash of the model identity and of the text's own hash (SHA-256 of
    the model key, a NUL byte and the text's hex digest)."""
    import polars as pl

    shas = pl.Series("text_sha", text_shas, dtype=pl.String)
    prefix = pl.lit(model_key + "\0", dtype=pl.String)
    keys = shas.to_frame().select(sha256_expr(prefix + pl.col("text_sha")))
    return keys.to_series().rename("embedding_key")


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()
