"""Progress reporting for long stages, shown by the CLI and silent elsewhere."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

__all__ = ["Details", "ProgressSink", "progress_sink", "stage_progress"]

Details = Callable[[], str]
"""What a stage says about itself besides done/total (statuses, calls, tokens, cost), asked
for whenever a progress line is written."""


class ProgressSink(Protocol):
    """Receives (stage, total) once, then advances."""

    def start(
        self, stage: str, total: int, details: Details | None = None
    ) -> Callable[[int], None]:
        """Begin a stage of `total` units; returns the function that advances it."""
        ...


_current: list[ProgressSink] = []


@contextmanager
def progress_sink(sink: ProgressSink) -> Iterator[None]:
    """Route stage progress to `sink` for the duration of the block."""
    _current.append(sink)
    try:
        yield
    finally:
        _current.pop()


def stage_progress(stage: str, total: int, details: Details | None = None) -> Callable[[int], None]:
    """The advance function for a stage, or a no-op when nobody is watching or the stage has
    nothing to do (a rerun's "0/0" would say nothing)."""
    if not _current or total <= 0:
        return lambda _done: None
    return _current[-1].start(stage, total, details)
