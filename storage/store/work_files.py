"""A run's own work files read back a slice at a time (the files its stages write beside the
database, under the run's work folder)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

__all__ = ["parquet_batches"]


def parquet_batches(path: Path, rows: int) -> Iterator[pl.DataFrame]:
    """The rows of the Parquet file `path` in file order, up to `rows` at a time: only one
    slice (and the row group it comes from) is held, whatever the file's size."""
    with pq.ParquetFile(path, pre_buffer=False) as parquet:
        for batch in parquet.iter_batches(batch_size=rows):
            frame = pl.DataFrame(batch)
            if frame.height:
                yield frame
