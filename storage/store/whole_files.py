"""Files written whole or not at all: a reader never sees half a file, and a crash or an error
leaves the file as it was. Light on purpose: the report and the command line import it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["replacing"]


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
