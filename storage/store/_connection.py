"""Opening a DuckDB file: one clear error for a held lock or a file that is not DuckDB's, and
the guard that keeps a stop request from cutting a statement in the middle."""

from __future__ import annotations

import fcntl
import functools
import math
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import duckdb

from storage.errors import StoreDamaged, StoreLockedError, StoreOpenError
from storage.names import sql_string
from storage.store.interrupts import requested, uninterrupted
from transforms.config.sizes import WRITE_ROW_GROUP_ROWS

__all__ = [
    "HOLD_BUDGET_S",
    "UNKNOWN_JOINS_S",
    "YIELD_S",
    "Holds",
    "attach",
    "holder_of",
    "locked",
    "read_method",
    "retried_while_busy",
    "uninterrupted_method",
]

_LOCK_PID = re.compile(r"\(PID (\d+)\)")
_SQLITE_BUSY = "database is locked"
"""SQLite's error once its busy timeout (META_BUSY_TIMEOUT) has passed."""
_HELD = re.compile(r"\block\b", re.IGNORECASE)
"""A lock error (not "block", which DuckDB's errors about corrupt files mention)."""


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
    """`method` runs whole, even when a stop request arrives while it runs (storage.store.interrupts)."""

    @functools.wraps(method)
    def run(*args: Any, **kwargs: Any) -> Any:
        with uninterrupted():
            return method(*args, **kwargs)

    return cast(F, run)


class _Reader(Protocol):
    def _read(self, call: Callable[[], Any]) -> Any: ...


def read_method(method: F) -> F:
    """`uninterrupted_method` for a method that only reads, through its store's `_read`
    (which tries it again where SQLite answered a DuckLake's read at once that its catalog
    is locked: `retried_while_busy`)."""

    @functools.wraps(method)
    def run(self: _Reader, *args: Any, **kwargs: Any) -> Any:
        with uninterrupted():
            return self._read(lambda: method(self, *args, **kwargs))

    return cast(F, run)


T = TypeVar("T")


def retried_while_busy(call: Callable[[], T]) -> T:
    """`call()`, tried again while it fails with SQLite's "database is locked", with pauses
    growing from 0.05 s to 1 s for up to `lock_wait_s`; a stop request ends the wait.

    For reads of a SQLite-catalog DuckLake outside a transaction only: such a read failed
    does nothing, so trying it again is safe. SQLite's busy timeout (META_BUSY_TIMEOUT) makes
    a read wait while another process writes the catalog, but under load a run's read was
    still answered "database is locked" at once, as it began a DuckLake transaction
    ("Failed to query most recent snapshot for DuckLake"; registering a frame, reading
    information_schema): two of two loaded suites on 2026-12-06 failed that way.
    """
    deadline = time.monotonic() + lock_wait_s()
    pause = 0.05
    while True:
        try:
            return call()
        except duckdb.Error as exc:
            left = deadline - time.monotonic()
            if _SQLITE_BUSY not in str(exc) or left <= 0 or requested() is not None:
                raise
        time.sleep(min(pause, left))
        pause = min(2 * pause, _LONGEST_PAUSE_S)


LOCK_WAIT_ENV = "TRACEGRADE_LOCK_WAIT_S"
"""Seconds a command waits for a database another process holds (default 600)."""

_DEFAULT_LOCK_WAIT_S = 600.0
_LONGEST_PAUSE_S = 1.0
_LONGEST_READER_PAUSE_S = 0.1
"""A reader tries again at least this often: a run lets go of the file for YIELD_S between
its holds, and a reader that slept through that gap would wait out the next hold too."""

YIELD_S = 0.3
"""How long a run leaves the file to others between two holds: longer than the 0.2 s a reader
that polls plain DuckDB sleeps between tries, so such a reader gets in at every gap (DuckDB's
lock is not fair: a shorter gap is missed by many of them). A shorter gap does not end a hold
(`Holds`)."""

HOLD_BUDGET_S = 3.0
"""The longest a run means to hold the file at a stretch: before each batch of a commit it lets
others in when the batch, taking as long as the longest of its kind so far, would end the hold
past this (the first of a kind joins a hold only while it has lasted UNKNOWN_JOINS_S). A
batch commits in about 1-1.5 s (WRITE_ROW_GROUP_ROWS), so a hold is one or two batches, and
one batch beside a second job that slows it down."""


UNKNOWN_JOINS_S = 0.5
"""The longest a hold may have lasted for the first batch of a kind (whose time is not known
yet) to join it rather than wait for a gap: it used to count as too long whatever the hold, and
a run of 75 traces slept through five gaps (1.5 s of its 2.2 s) before batches of a few
milliseconds. A first batch that turns out long makes a hold at most this much longer than it
would have been after a gap."""


class Holds:
    """The times a store has held its file: from an attach to the release that leaves the file
    to others for at least YIELD_S (a shorter gap lets no polling reader in, so the hold goes
    on across it), and how long each kind of batch takes."""

    def __init__(self) -> None:
        self._ended: list[tuple[float, float]] = []
        self._since: float | None = None
        self._longest: dict[str, float] = {}

    def attached(self) -> None:
        now = time.monotonic()
        if self._ended and now - self._ended[-1][1] < YIELD_S:
            self._since = self._ended.pop()[0]
        else:
            self._since = now

    def released(self) -> None:
        if self._since is not None:
            self._ended.append((self._since, time.monotonic()))
            self._since = None

    def took(self, kind: str, seconds: float) -> None:
        """A batch of `kind` took `seconds`."""
        self._longest[kind] = max(self._longest.get(kind, 0.0), seconds)

    def fits(self, kind: str) -> bool:
        """Whether a batch of `kind` ends the hold under way within HOLD_BUDGET_S (True when
        nothing is held)."""
        if self._since is None:
            return True
        held = time.monotonic() - self._since
        expected = self._longest.get(kind)
        if expected is None:  # the first of its kind: how long it takes is not known yet
            return held <= UNKNOWN_JOINS_S
        return held + expected <= HOLD_BUDGET_S

    def so_far(self) -> list[float]:
        """The seconds of each hold, the one under way included."""
        ongoing = [time.monotonic() - self._since] if self._since is not None else []
        return [end - start for start, end in self._ended] + ongoing


def locked(path: Path) -> int:
    """An exclusive `flock` on the file `path` (created if missing), waited for; returns its
    descriptor, whose closing lets go of the lock."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


def lock_wait_s() -> float:
    """The wait for a held database: `TRACEGRADE_LOCK_WAIT_S`, else 10 minutes.

    Raises:
        StoreOpenError: the variable is not a number of seconds >= 0.
    """
    raw = os.environ.get(LOCK_WAIT_ENV)
    if raw is None:
        return _DEFAULT_LOCK_WAIT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise StoreOpenError(
            f"{LOCK_WAIT_ENV}={raw!r} is not a number of seconds; set it to 0 or more "
            "(0 fails at once when another process holds the database), or unset it for 600"
        )
    return value


def attach(
    con: duckdb.DuckDBPyConnection,
    path: Path | str,
    alias: str,
    read_only: bool,
    data_path: str | None = None,
) -> None:
    """Attach the database file `path` (or a DuckLake, with the `data_path` a new one keeps its
    files in) to `con` as `alias` and make it the default catalog; a file that is not DuckDB's
    is a clear error at once.

    While another process holds the file (DuckDB allows one writer, or readers without a
    writer), it tries again with pauses growing from 0.05 s to 1 s (0.1 s for a reader) for up
    to `lock_wait_s`, saying on stderr who holds it, then fails naming the holder. A SQLite
    catalog that answers "database is locked" is tried again the same way, quietly. A stop
    request ends the wait.
    """
    limit = lock_wait_s()
    options = ["READ_ONLY"] if read_only else []
    if not read_only and not str(path).startswith("ducklake:"):
        options.append(f"ROW_GROUP_SIZE {WRITE_ROW_GROUP_ROWS}")
    if data_path is not None:
        options.append(f"DATA_PATH {sql_string(data_path)}")
    sqlite = str(path).startswith("ducklake:sqlite:")
    if sqlite:
        # SQLite fails a statement at once while another process holds its catalog (a
        # reader while a run commits, a commit while a run reads): wait as for a file. The
        # SQLite of DuckDB's extension waits in whole seconds (a second a try, none for a
        # timeout under 1,000 ms: measured), so the wait is rounded up to whole seconds.
        options.append(f"META_BUSY_TIMEOUT {math.ceil(limit) * 1000}")
    mode = f" ({', '.join(options)})" if options else ""
    statement = f'ATTACH {sql_string(path)} AS "{alias}"{mode}'

    def attached() -> None:
        con.execute(statement)

    deadline = time.monotonic() + limit
    pause, announced = 0.05, ""
    while True:
        try:
            # a SQLite catalog is read as a read is (SQLite may answer at once whatever its
            # busy timeout, and a failed ATTACH attaches nothing)
            if sqlite:
                retried_while_busy(attached)
            else:
                attached()
        except duckdb.Error as exc:
            text = str(exc)
            if _SQLITE_BUSY in text and sqlite:
                raise _catalog_locked(path, limit) from None
            if _HELD.search(text) is None:
                raise _not_duckdb(path, text, exc) from None
            holder, left = holder_of(text), deadline - time.monotonic()
        else:
            con.execute(f'USE "{alias}"')
            return
        if left <= 0:
            raise StoreLockedError(
                f"database {path} is in use by {holder}; waited {limit:.0f} s for it "
                f"({LOCK_WAIT_ENV}); wait for that process to finish or stop it, then run "
                "again (DuckDB allows one writer per file)"
            )
        if holder != announced:
            print(
                f"tracegrade: database {path} is in use by {holder}; waiting for it, "
                f"{left:.0f} s at most ({LOCK_WAIT_ENV})",
                file=sys.stderr,
                flush=True,
            )
            announced = holder
        time.sleep(min(pause, left))
        pause = min(2 * pause, _LONGEST_READER_PAUSE_S if read_only else _LONGEST_PAUSE_S)


def _catalog_locked(path: Path | str, limit: float) -> StoreLockedError:
    return StoreLockedError(
        f"the catalog of {path} is locked by another process (a write transaction on its "
        f"SQLite file); waited {limit:.0f} s for it ({LOCK_WAIT_ENV}); wait for that process "
        "to finish or stop it, then run again"
    )


def _not_duckdb(path: Path | str, text: str, exc: duckdb.Error) -> StoreOpenError | StoreDamaged:
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    if str(path).startswith("ducklake:"):
        return StoreOpenError(f"database {path} cannot be attached as a DuckLake: {first}")
    if "newer version of DuckDB" in text:
        return StoreOpenError(
            f"database {path} was written by a newer DuckDB than this one ({duckdb.__version__}"
            f", constraints.txt says why): {first} Move it with that DuckDB's EXPORT DATABASE "
            f"and this one's IMPORT DATABASE (docs/storage.md), or give another file"
        )
    if _duckdb_header(path):
        return StoreDamaged(
            f"database {path} is a DuckDB file that cannot be read ({first}): it is damaged "
            "(cut short or overwritten); restore it from a backup, or score into a new file"
        )
    return StoreOpenError(
        f"database {path} cannot be opened as a DuckDB database ({first}); give the path "
        "of a tracegrade database, or of a new file to create"
    )


def _duckdb_header(path: Path | str) -> bool:
    """True when the file begins as a DuckDB database file does (`DUCK` after its checksum)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(12)[8:12] == b"DUCK"
    except OSError:
        return False
