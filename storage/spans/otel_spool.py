"""Spans parked by trace id until every file is read, so that a trace whose spans are spread
over lines and files is mapped whole, in bounded memory.

Span rows go to one of `buckets` by a hash of their trace id. Rows stay in memory until the
parked rows pass `memory_bytes`; then every bucket's rows are written to a Parquet part in a
temporary folder. `buckets()` then hands over each bucket's rows, all of a trace's spans
together, one bucket at a time.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import polars as pl

__all__ = ["BUCKET_BYTES", "DEFAULT_SPOOL_BYTES", "MAX_BUCKETS", "SpanSpool", "bucket_count"]

DEFAULT_SPOOL_BYTES = 64 << 20
"""Span rows held in memory before the spool writes them to disk."""

BUCKET_BYTES = 96 << 20
"""Input bytes a bucket is made for."""
MAX_BUCKETS = 256
_SEED = 0x7E57


def bucket_count(input_bytes: int) -> int:
    """How many buckets to spread the spans of `input_bytes` of files over: one per 96 MiB,
    so that one bucket's spans stay well within memory whatever the input's size."""
    return max(1, min(MAX_BUCKETS, -(-input_bytes // BUCKET_BYTES)))


def _compacted(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with its own copy of its text. Polars text columns can point into the buffers
    of the frame they were cut from: a span's tool arguments keep the whole chunk's attribute
    values alive (the full message histories), so parked rows would hold ten times their size.
    A pass through Arrow's plain strings copies only the bytes the rows use."""
    return pl.DataFrame(pl.from_arrow(frame.to_arrow(compat_level=pl.CompatLevel.oldest())))


class SpanSpool:
    """Span rows parked in buckets by trace id (memory first, disk past `memory_bytes`).

    Args:
        buckets: how many buckets (see `bucket_count`).
        folder: where the temporary parts go (a new temporary folder inside it).
        memory_bytes: rows held in memory before all buckets are written out.
    """

    def __init__(
        self, buckets: int, folder: Path | None = None, memory_bytes: int = DEFAULT_SPOOL_BYTES
    ) -> None:
        self._buckets = buckets
        self._memory_bytes = memory_bytes
        self._parent = folder
        self._folder: Path | None = None
        self._held: list[list[pl.DataFrame]] = [[] for _ in range(buckets)]
        self._held_bytes = 0.0
        self._parts = 0
        self._lock = threading.Lock()
        self.rows = 0
        """Rows added so far."""

    def __enter__(self) -> SpanSpool:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def add(self, spans: pl.DataFrame, order: int = 0) -> None:
        """Park `spans` (rows with a `trace_hex` column) in their buckets. Threads may add at
        once; `buckets()` hands rows back sorted by `order` (stable), so a caller adding
        chunks from several threads still gets them in file order."""
        if spans.is_empty():
            return
        spans = _compacted(spans).with_columns(_order=pl.lit(order, dtype=pl.Int64))
        if self._buckets == 1:
            parts = {0: spans}
        else:
            bucket = pl.col("trace_hex").hash(_SEED) % self._buckets
            keyed = spans.with_columns(_bucket=bucket.fill_null(0).cast(pl.Int64))
            parts = {
                int(key[0]): part.drop("_bucket")  # type: ignore[call-overload]
                for key, part in keyed.partition_by("_bucket", as_dict=True).items()
            }
        with self._lock:
            self.rows += spans.height
            for bucket_index, part in parts.items():
                self._held[bucket_index].append(part)
                self._held_bytes += part.estimated_size()
            if self._held_bytes > self._memory_bytes:
                self._write_out()

    def _write_out(self) -> None:
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix=".tracegrade-spans-", dir=self._parent))
        for index, frames in enumerate(self._held):
            if frames:
                path = self._folder / f"{index:03d}-{self._parts:06d}.parquet"
                pl.concat(frames, how="vertical").write_parquet(path, compression="lz4")
        self._parts += 1
        self._held = [[] for _ in range(self._buckets)]
        self._held_bytes = 0.0

    def buckets(self) -> Iterator[pl.DataFrame]:
        """Each non-empty bucket's rows, in the order they were added; a bucket's rows are
        released once the next one is asked for."""
        for index in range(self._buckets):
            frames: list[pl.DataFrame] = []
            if self._folder is not None:
                frames = [
                    pl.read_parquet(part)
                    for part in sorted(self._folder.glob(f"{index:03d}-*.parquet"))
                ]
            frames.extend(self._held[index])
            self._held[index] = []
            if frames:
                bucket = pl.concat(frames, how="vertical")
                del frames
                yield bucket.sort("_order", maintain_order=True).drop("_order")

    def close(self) -> None:
        """Remove the temporary parts."""
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
