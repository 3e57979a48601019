"""Span files read on worker threads, a block at a time: the blocks of one file parsed side by
side, so that one large file (a Collector file exporter without rotation, one export
download) keeps every core busy as a folder of files does.

This thread reads each block's bytes (`storage.spans.otel_files.chunk_jobs`); worker threads
parse them (Arrow's JSON reader and Polars let go of the GIL) and hand each chunk, with its
place in the files' order, to the caller's function, which parks it (`otel_spool`) for the
spool to hand back in file order. Blocks of Phoenix or Langfuse rows in a large file are
parsed in worker processes instead: such rows are read mostly in Python (Phoenix's line by
line; a Langfuse export of large observations, whose message histories the column-wise reader
decodes and writes in Python: docs/performance.md), and threads would wait on one another for
the GIL. The chunks come back to the worker threads,
which hand them on as before.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import (
    FIRST_COMPLETED,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from pathlib import Path
from typing import TypeGuard

from storage.spans._line_blocks import BlockBuffers
from storage.spans.otel_files import (
    ChunkJob,
    LineBlock,
    SpanChunk,
    chunk_jobs,
    log_events,
    parsed_block,
)
from storage.spans.otlp_logs import FileLogs, starts_with_logs
from transforms.config.otel import OtelImportConfig

__all__ = ["PROCESS_FILE_BYTES", "read_chunks"]


def read_chunks(
    paths: Sequence[Path],
    config: OtelImportConfig,
    handle: Callable[[int, SpanChunk], None],
    workers: int,
    chunk_bytes: int | None = None,
    logs: Mapping[Path, FileLogs] | None = None,
) -> None:
    """Every chunk of the files, in any order, to `handle(order, chunk)` on one of `workers`
    threads; `order` ranks the chunk in the files' order (the first file's chunks first).
    Blocks of one file are parsed side by side, so one large file keeps every worker busy.
    This thread reads the blocks' bytes, at most two jobs a worker ahead of them. `logs`:
    the log records' content of these files, searched with other files' (`log_events`).

    Raises:
        InputError: as `iter_span_chunks`, from whichever job met it.
    """
    # a log record's span may be in another of the files: where the files begin with log
    # records, all are searched first; else each is searched as its blocks are read. `logs`:
    # that search done already, over these files and others read with them
    if logs is None and any(starts_with_logs(path) for path in paths):
        logs = log_events(paths)

    def own(path: Path) -> FileLogs | None:
        return None if logs is None else logs.get(path, FileLogs())

    buffers = BlockBuffers()
    jobs = (
        job for path in paths for job in chunk_jobs(path, config, chunk_bytes, own(path), buffers)
    )

    def run(number: int, chunks: Callable[[], Iterable[SpanChunk]]) -> None:
        for part, chunk in enumerate(chunks()):
            handle(number * _JOB_PARTS + part, chunk)

    processes: ProcessPoolExecutor | None = None
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="span-read") as pool:
        pending: set[Future[None]] = set()
        try:
            for number, job in enumerate(jobs):
                if _elsewhere(job):
                    if processes is None:
                        spawn = multiprocessing.get_context("spawn")
                        processes = ProcessPoolExecutor(
                            max_workers=workers,
                            mp_context=spawn,
                            initializer=_exit_with_parent,
                            initargs=(os.getpid(),),
                        )
                    parsed = processes.submit(parsed_block, job)
                    pending.add(pool.submit(run, number, parsed.result))
                else:
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
            if processes is not None:
                processes.shutdown(cancel_futures=True)


def _exit_with_parent(parent: int) -> None:
    """A worker process's start: it ends itself once its parent is gone. A parent killed
    outright (kill -9) leaves its workers blocked on a pipe nobody reads, each holding a
    block's memory, until they are killed by hand."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _elsewhere(job: ChunkJob) -> TypeGuard[LineBlock]:
    """Parse this job in a worker process: a block of lines read one by one in Python, of a
    file of `PROCESS_FILE_BYTES` or more (a smaller file is not worth a process's start,
    about a second)."""
    return isinstance(job, LineBlock) and job.python and job.file_bytes >= PROCESS_FILE_BYTES


PROCESS_FILE_BYTES = 64 << 20
"""The smallest file read line by line in Python whose blocks are parsed in worker processes."""

_JOB_PARTS = 1 << 32
"""Chunks one job may yield: a chunk's order is its job's number times this, plus its place."""
