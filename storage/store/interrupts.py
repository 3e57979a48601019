"""Stop requests (SIGINT, SIGTERM) raised where a run can stop cleanly.

DuckDB checks for signals while a query runs and cancels the query when a handler raises
("Query interrupted"), which turned a Ctrl-C during a commit into a traceback and left the run
recorded as running; Polars reports an interruption as its own KeyboardInterrupt. So the
command line's handler calls `interrupt`, which raises the stop at once only when nothing is
in the way: inside database work (`uninterrupted`) it waits for the work to end, and while an
exception is already on its way out it waits for the run's next step (`stop_if_requested`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["interrupt", "requested", "stop_if_requested", "uninterrupted"]

_depth = 0
_requested: list[BaseException] = []
_raised: list[bool] = []


@contextmanager
def uninterrupted() -> Iterator[None]:
    """Database work that a stop request must not cut in the middle; a request that arrived
    meanwhile is raised when the outermost block ends."""
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and sys.exc_info()[1] is None:
            stop_if_requested()


def interrupt(error: BaseException) -> None:
    """Ask the command to stop with `error` (the first request counts, later ones are ignored);
    raised now when nothing is in the way."""
    if _requested:
        return
    _requested.append(error)
    if _depth == 0 and sys.exc_info()[1] is None:
        stop_if_requested()


def stop_if_requested() -> None:
    """Raise the stop request that has not been raised yet, if any (a run calls this between
    its steps)."""
    if _requested and not _raised:
        _raised.append(True)
        raise _requested[0]


def requested() -> BaseException | None:
    """The stop request of this process, raised or not."""
    return _requested[0] if _requested else None
