"""What several commands share: the `--prefect` flag, the database check that runs before any
work, and the progress bars."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["add_prefect_flag", "check_database", "progress_bars"]


def add_prefect_flag(command: argparse.ArgumentParser) -> None:
    """`--prefect`: run as Prefect flow runs even with no Prefect API configured."""
    command.add_argument(
        "--prefect",
        action="store_true",
        help="run as Prefect flow runs (task runs, artifacts); without PREFECT_API_URL a "
        "temporary Prefect server is started for the run and stopped with it",
    )


def check_database(db: str, *, must_exist: bool = False, data_path: str | None = None) -> None:
    """Fail before any work when `db` cannot be the run's database: a missing file where one
    must exist, a folder, a file that is not a DuckDB database, or one another process holds.
    With `data_path`, a new DuckLake is created there (a DuckLake keeps its data path).

    Raises:
        InputError: `must_exist` and the file does not exist.
        StoreOpenError: the path is a folder or not a DuckDB database.
        StoreLockedError: another process holds the file.
    """
    from storage.errors import InputError
    from storage.store.duckdb_store import DuckDBStore
    from storage.store.locations import locate

    location = locate(db)
    if must_exist and not location.exists():
        raise InputError(
            f"database {db} does not exist; check the path, or create it with "
            f"tracegrade score PATH --db {db}"
        )
    if location.exists() or data_path is not None:
        DuckDBStore(db, read_only=must_exist, data_path=data_path).close()


@contextmanager
def progress_bars() -> Iterator[None]:
    """Progress of the block's long stages, on stderr: bars when stderr is a terminal (the
    summary on stdout may go to a file or a pipe meanwhile), else log lines (at every 10 % and
    at least every 30 s), which cron, CI and a Prefect worker keep."""
    from pipelines.progress import ProgressSink, progress_sink
    from tracegrade.cli.progress import LogProgress, RichProgress

    sink: RichProgress | LogProgress = RichProgress() if sys.stderr.isatty() else LogProgress()
    shown: ProgressSink = sink
    with sink, progress_sink(shown):
        yield
