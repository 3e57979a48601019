"""Which runs are alive: a run holds an exclusive `flock` on a file in its work folder for as
long as its process lives, and the kernel lets go of it when the process ends, however it ends.

Runs let go of the database file between their batches (storage.duckdb_store), so several
can be `running` in the `runs` table at once; this tells a live one from one a crash left
behind. `flock` is local to one machine: one database file serves the processes of one host.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

__all__ = ["ALIVE", "hold_alive", "is_alive", "let_go"]

ALIVE = ".alive"
"""The file in a run's work folder that its process holds locked."""


def hold_alive(folder: Path) -> int:
    """Create `folder` and lock its ALIVE file for this process; returns the descriptor."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / ALIVE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BaseException:
        os.close(fd)
        raise
    return fd


def let_go(fd: int) -> None:
    """Unlock and close what `hold_alive` returned."""
    os.close(fd)


def is_alive(folder: Path) -> bool:
    """True while some process holds the ALIVE file of `folder` locked."""
    try:
        fd = os.open(folder / ALIVE, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
