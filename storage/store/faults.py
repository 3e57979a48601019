"""Faults of the store and the machine, each said in one line: what failed and what to do.

A run that meets one (the disk full, the DuckLake catalog's server gone, a data file deleted
or damaged, the SQLite catalog locked past its wait) fails, is recorded `failed` (or, when
even that write fails, `interrupted` by the next run), and the command ends with exit 4 and
the line `describe_fault` gives; docs/operating.md has the table. Anything else is not a
fault of the store and keeps its traceback.
"""

from __future__ import annotations

import errno
import re
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

from storage.errors import StoreOpenError
from storage.store.locations import locate

__all__ = ["RECORDED", "UNRECORDED", "describe_fault"]

RECORDED = "tracegrade: the run is recorded failed"
"""The note a run's error carries once the run is recorded `failed`."""
UNRECORDED = "tracegrade: the run could not be recorded failed"
"""The note a run's error carries when recording it failed met the fault too."""

_FULL = (
    "No space left on device",
    "os error 28",
    "database or disk is full",
    "disk is full",
    "Disk quota exceeded",
)
_UNREACHABLE = (
    "Connection refused",
    "could not connect to server",
    "server closed the connection",
    "Unable to connect to Postgres",
    "terminating connection",
    "no connection to the server",
    "Connection reset by peer",
)
_LOCKED = ("database is locked",)
_DAMAGED = (
    "No such file or directory",
    "Cannot open file",
    "No files found that match",
    "No magic bytes found",
    "not a valid DuckDB database file",
    "Corrupt",
    "corrupt",
    "truncated",
    "Invalid Parquet",
    "Could not read enough bytes",
    "out of specification",
)
_QUOTED_FILE = re.compile(r"""["']([^"']+\.(?:parquet|duckdb|sqlite|db))["']""")


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        found = pending.pop(0)
        if id(found) in seen:
            continue
        seen.add(id(found))
        yield found
        pending.extend(e for e in (found.__cause__, found.__context__) if e is not None)


def _is_store_error(error: BaseException) -> bool:
    module = type(error).__module__.split(".")[0]
    return isinstance(error, OSError) or module in ("duckdb", "_duckdb", "polars", "pyarrow")


def _free_mb(path: Path) -> str:
    for folder in (path, *path.parents):
        if folder.exists():
            return f"{shutil.disk_usage(folder).free / 1e6:,.0f} MB free"
    return "free space unknown"


def _holder(db: str | None) -> Path:
    """The folder a run's files are in: beside the DuckDB file or the SQLite catalog, where
    its work folder is (`storage.store.locations`)."""
    if not db:
        return Path.cwd()
    try:
        return locate(db).anchor.resolve().parent
    except StoreOpenError:
        return Path.cwd()


def _server(db: str | None, message: str) -> str:
    """HOST:PORT of a PostgreSQL catalog, from its connection string or the error."""
    found = re.search(r'(?:server at|host) "?([\w.\-]+)"?.*?port "?(\d+)', message, re.S)
    if found:
        return f"{found.group(1)}:{found.group(2)}"
    host, port = _address(db)
    return f"{host}:{port}"


def _address(db: str | None) -> tuple[str, int]:
    """The host and port a PostgreSQL catalog's connection string names (libpq's defaults)."""
    conninfo = dict(re.findall(r"(\w+)=(\S+)", db or ""))
    return conninfo.get("host", "localhost"), int(conninfo.get("port", "5432"))


def describe_fault(
    error: BaseException, db: str | None = None, *, files: bool = True
) -> str | None:
    """One line for a fault of the store or the machine behind `error` (its causes
    included); None when it is not one. `db` is the command's `--db`; `files=False` leaves
    out a missing or damaged file (a query may name files of its own)."""
    chain = [e for e in _chain(error) if _is_store_error(e)]
    if not chain:
        return None
    texts = " | ".join(str(e) for e in chain)
    notes = {note for e in _chain(error) for note in getattr(e, "__notes__", ())}
    tail = (
        "; the run could not be recorded failed, and the next run records it as interrupted"
        if UNRECORDED in notes
        else "; the run is recorded failed and a rerun continues where it stopped"
        if RECORDED in notes
        else ""
    )
    if any(getattr(e, "errno", None) in (errno.ENOSPC, errno.EDQUOT) for e in chain) or any(
        mark in texts for mark in _FULL
    ):
        where = _holder(db)
        return f"the disk holding {where} is full ({_free_mb(where)}): free space and rerun{tail}"
    if any(mark in texts for mark in _UNREACHABLE) or _catalog_down(db, chain):
        return (
            f"the DuckLake catalog is unreachable at {_server(db, texts)} "
            f"({_first_line(chain)}): start it (or check the network) and rerun{tail}"
        )
    if any(mark in texts for mark in _LOCKED):
        return (
            f"the DuckLake catalog stayed locked by another process ({_first_line(chain)}): "
            f"rerun when it is free{tail}"
        )
    if any(mark in texts for mark in _DAMAGED):
        if not files:
            return None
        named = _QUOTED_FILE.search(texts)
        what = f"data file {named.group(1)}" if named else "a data file of the store"
        return (
            f"{what} is missing or damaged ({_first_line(chain)}): restore it from a backup, "
            f"or remove the store and score again{tail}"
        )
    if any(type(e).__name__ == "OutOfMemoryException" for e in chain):
        return (
            f"the store's DuckDB ran out of its memory limit ({_first_line(chain)}): the command "
            f"needs more memory than it is given here; rerun it with --debug and report the "
            f"traceback (the limit: MEMORY_LIMIT in storage/store/duckdb_store.py){tail}"
        )
    if any(type(e).__name__ == "IOException" for e in chain):
        return f"the store could not be read or written ({_first_line(chain)}){tail}"
    return None


def _catalog_down(db: str | None, chain: list[BaseException]) -> bool:
    """A PostgreSQL catalog that no longer takes connections. The postgres extension can
    lose the server with no reason of its own (`Failed to execute query "ROLLBACK": ` and
    nothing after), so the server is asked: a refused TCP connection means it is gone."""
    if not db or "postgres:" not in db:
        return False
    if not any(type(e).__module__.split(".")[0] in ("duckdb", "_duckdb") for e in chain):
        return False
    host, port = _address(db)
    if host.startswith("/"):
        return False  # a Unix socket: its error text says enough
    try:
        with socket.create_connection((host, port), timeout=2):
            return False
    except OSError:
        return True


def _first_line(chain: list[BaseException]) -> str:
    text = str(chain[-1]).strip() or type(chain[-1]).__name__
    return text.splitlines()[0][:200]
