"""Flat Parquet input files (one record per row) read and cast to a fixed column schema."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import polars as pl

from storage.errors import InputError

__all__ = ["conform_to_schema", "read_parquet_input"]


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0]


def read_parquet_input(path: Path) -> pl.DataFrame:
    """The whole file as Polars read it, so its column names can be checked before the cast.

    Raises:
        InputError: the file is not Parquet or cannot be read; the message names the file.
    """
    try:
        return pl.read_parquet(path)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputError(f"{path}: not a readable Parquet file ({_first_line(exc)})") from None


def conform_to_schema(
    raw: pl.DataFrame, schema: Mapping[str, pl.DataType], *, path: Path, problem: str, fix: str
) -> pl.DataFrame:
    """`raw` with exactly the columns of `schema`, each cast; a column the file lacks is null.

    Raises:
        InputError: a column cannot be cast: "{path}: {problem} (polars' reason); {fix}".
    """
    try:
        return raw.select(
            pl.col(name).cast(dtype) if name in raw.columns else pl.lit(None, dtype).alias(name)
            for name, dtype in schema.items()
        )
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputError(f"{path}: {problem} ({_first_line(exc)}); {fix}") from None
