"""Span files read on worker threads, a block at a time: the blocks of one file parsed side by
side, so that one large file (a Collector file exporter without rotation, one export
download) keeps every core busy as a folder of files does.

This thread reads each block's bytes (`storage.spans.otel_files.chunk_jobs`); the workers
parse them (Arrow's JSON reader and Polars let go of the GIL) and hand each chunk, with its
place in the files' order, to the caller's function, which parks it (`otel_spool`) for the
spool to hand back in file order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

from storage.spans.otel_files import CHUNK_BYTES, ChunkJob, SpanChunk, chunk_jobs
from transforms.config.otel import OtelImportConfig

__all__ = ["read_chunks"]


def read_chunks(
    paths: Sequence[Path],
    config: OtelImportConfig,
    handle: Callable[[int, SpanChunk], None],
    workers: int,
    chunk_bytes: int = CHUNK_BYTES,
) -> None:
    """Every chunk of the files, in any order, to `handle(order, chunk)` on one of `workers`
    threads; `order` ranks the chunk in the files' order (the first file's chunks first).
    Blocks of one file are parsed side by side, so one large file keeps every worker busy.
    This thread reads the blocks' bytes, at most two jobs a worker ahead of them.

    Raises:
        InputError: as `iter_span_chunks`, from whichever job met it.
    """
    jobs = (job for path in paths for job in chunk_jobs(path, config, chunk_bytes))

    def run(number: int, job: ChunkJob) -> None:
        for part, chunk in enumerate(job()):
            handle(number * _JOB_PARTS + part, chunk)

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="span-read") as pool:
        pending: set[Future[None]] = set()
        try:
            for number, job in enumerate(jobs):
                pending.add(pool.submit(run, number, job))
                if len(pending) >= 2 * workers:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        future.result()
            for future in pending:
                future.result()
        finally:
            for future in pending:
                future.cancel()


_JOB_PARTS = 1 << 32
"""Chunks one job may yield: a chunk's order is its job's number times this, plus its place."""
