"""Work files: a run's own files read back a slice at a time (the files its stages write beside
the database, under the run's work folder), and files written whole or not at all."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

__all__ = ["parquet_batches", "replacing"]


def parquet_batches(path: Path, rows: int) -> Iterator[pl.DataFrame]:
    """The rows of the Parquet file `path` in file order, up to `rows` at a time: only one
    slice (and the row group it comes from) is held, whatever the file's size."""
    with pq.ParquetFile(path, pre_buffer=False) as parquet:
        for batch in parquet.iter_batches(batch_size=rows):
            frame = pl.DataFrame(batch)
            if frame.height:
                yield frame


@contextmanager
def replacing(target: Path) -> Iterator[Path]:
    """A temporary path beside `target`, renamed onto it when the block succeeds and removed
    when it fails: a crash or an error leaves the old file, never half of the new one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        yield temporary
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
