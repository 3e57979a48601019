"""Progress of long stages on the terminal: bars drawn on stderr."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["RichProgress"]


class RichProgress:
    """Progress bars for long stages, drawn on stderr (a `pipelines.progress.ProgressSink`)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("{task.description:>10}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def start(self, stage: str, total: int) -> Callable[[int], None]:
        """Add a bar for `stage`; returns the function that advances it."""
        task_id = self._progress.add_task(stage, total=total)
        return lambda done: self._progress.advance(task_id, done)
