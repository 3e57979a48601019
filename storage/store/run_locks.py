"""Which runs are alive: a run holds an exclusive `flock` on a file in its work folder for as
long as its process lives, and the kernel lets go of it when the process ends, however it ends.

Runs let go of the database file between their batches (storage.store.duckdb_store), so several
can be `running` in the `runs` table at once; this tells a live one from one a crash left
behind. `flock` is local to one machine: one database file serves the processes of one host.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

__all__ = ["ALIVE", "dead_folders", "hold_alive", "is_alive", "let_go", "remove_if_empty"]

ALIVE = ".alive"
"""The file in a run's work folder that its process holds locked."""

STARTING = ".starting-"
"""The prefix of a work folder whose ALIVE file is not locked yet (see `hold_alive`)."""

STARTING_GRACE_S = 3600.0
"""How old a STARTING folder must be before `dead_folders` takes it for a killed start."""


def hold_alive(folder: Path) -> int:
    """Create `folder` with its ALIVE file locked for this process; returns the descriptor.

    The folder is made and locked under a hidden STARTING name and then renamed, so
    `folder` never exists unlocked while its process lives: `dead_folders` can remove every
    unlocked one without racing a run that is starting.
    """
    starting = folder.parent / f"{STARTING}{folder.name}"
    for _ in range(3):
        folder.parent.mkdir(parents=True, exist_ok=True)
        try:
            starting.mkdir()
            break
        except FileNotFoundError:  # a finishing run removed the empty parent in between
            continue
    else:
        starting.mkdir()
    fd = os.open(starting / ALIVE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        starting.rename(folder)
    except BaseException:
        os.close(fd)
        raise
    return fd


def let_go(fd: int) -> None:
    """Unlock and close what `hold_alive` returned."""
    os.close(fd)


def remove_if_empty(root: Path) -> None:
    """Remove the folder of the runs' work folders once none is left in it, so a store leaves
    no empty folder behind (a run starting meanwhile keeps it, or makes it again)."""
    with contextlib.suppress(OSError):  # not empty, or already gone
        root.rmdir()


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


def dead_folders(root: Path) -> list[Path]:
    """The work folders under `root` whose process is gone: every unlocked one, and a
    STARTING one a kill left in the instant between its creation and its lock, once it is
    older than STARTING_GRACE_S."""
    if not root.is_dir():
        return []
    now = time.time()
    dead = []
    for folder in root.iterdir():
        if not folder.is_dir():
            continue
        if folder.name.startswith(STARTING):
            try:
                age = now - folder.stat().st_mtime
            except FileNotFoundError:  # renamed by its run meanwhile
                continue
            if age > STARTING_GRACE_S and not is_alive(folder):
                dead.append(folder)
        elif not is_alive(folder):
            dead.append(folder)
    return dead
