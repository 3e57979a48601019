"""Opening a DuckDB file: one clear error for a held lock or a file that is not DuckDB's, and
the guard that keeps a stop request from cutting a statement in the middle."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import duckdb

from storage.errors import StoreLockedError, StoreOpenError
from storage.interrupts import uninterrupted

__all__ = ["connect", "holder_of", "uninterrupted_method"]

_LOCK_PID = re.compile(r"\(PID (\d+)\)")


def holder_of(message: str) -> str:
    """Describe the process named in a DuckDB lock error: its PID and, when readable, command."""
    match = _LOCK_PID.search(message)
    if match is None:
        return "another process"
    pid = match.group(1)
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        command = ""
    return f"PID {pid} ({command})" if command else f"PID {pid}"


F = TypeVar("F", bound=Callable[..., Any])


def uninterrupted_method(method: F) -> F:
    """`method` runs whole, even when a stop request arrives while it runs (storage.interrupts)."""

    @functools.wraps(method)
    def run(*args: Any, **kwargs: Any) -> Any:
        with uninterrupted():
            return method(*args, **kwargs)

    return cast(F, run)


def connect(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """A connection to `path`; a held lock or a file that is not DuckDB's is a clear error."""
    try:
        return duckdb.connect(str(path), read_only=read_only)
    except duckdb.Error as exc:
        text = str(exc)
        if "lock" in text.lower():
            raise StoreLockedError(
                f"database {path} is in use by {holder_of(text)}; wait for that process "
                "to finish or stop it, then run again (DuckDB allows one writer per file)"
            ) from None
        first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
        raise StoreOpenError(
            f"database {path} cannot be opened as a DuckDB database ({first}); give the path "
            "of a tracegrade database, or of a new file to create"
        ) from None
