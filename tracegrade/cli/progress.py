"""Progress of long stages: bars on a terminal, log lines anywhere else (cron, CI, a Prefect
worker), where a bar shows nothing until the end."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TextIO

from pipelines.progress import Details

__all__ = ["LogProgress", "RichProgress"]


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

    def start(
        self, stage: str, total: int, details: Details | None = None
    ) -> Callable[[int], None]:
        """Add a bar for `stage`; returns the function that advances it."""
        task_id = self._progress.add_task(stage, total=total)
        return lambda done: self._progress.advance(task_id, done)


def _duration(seconds: float) -> str:
    whole = int(round(seconds))
    if whole >= 3600:
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    return f"{whole // 60}m{whole % 60:02d}s" if whole >= 60 else f"{whole}s"


@dataclass
class _Stage:
    name: str
    total: int
    details: Details | None
    started: float
    done: int = 0
    tenths: int = 0
    """Tenths of the total already reported."""
    last: float = 0.0
    """When the stage's last line was written."""


class LogProgress:
    """Progress as one line per report on a stream (stderr by default): at every 10 % of a
    stage and at least every `interval_s` seconds while it runs, with done/total, the
    stage's details (statuses, calls, tokens, cost) and the time left at the pace so far."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        interval_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._interval = interval_s
        self._clock = clock
        self._stages: list[_Stage] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="progress-log", daemon=True)

    def __enter__(self) -> LogProgress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def start(
        self, stage: str, total: int, details: Details | None = None
    ) -> Callable[[int], None]:
        """Begin `stage` (its first line now); returns the function that advances it."""
        now = self._clock()
        state = _Stage(stage, total, details, now, last=now)
        with self._lock:
            self._stages.append(state)
            self._write(state, now)

        def advance(done: int) -> None:
            with self._lock:
                state.done += done
                tenths = 10 if state.total <= 0 else min(10, state.done * 10 // state.total)
                if tenths > state.tenths:
                    state.tenths = tenths
                    self._write(state, self._clock())
                if state.done >= state.total and state in self._stages:
                    self._stages.remove(state)

        return advance

    def _tick(self) -> None:
        while not self._stop.wait(min(1.0, self._interval)):
            self.write_due()

    def write_due(self) -> None:
        """Write a line for every running stage whose last line is `interval_s` old (the
        sink's thread calls this every second)."""
        now = self._clock()
        with self._lock:
            for state in self._stages:
                if now - state.last >= self._interval:
                    self._write(state, now)

    def _write(self, state: _Stage, now: float) -> None:
        state.last = now
        elapsed = now - state.started
        share = state.done / state.total if state.total > 0 else 1.0
        line = f"{datetime.now():%H:%M:%S} {state.name}: {state.done}/{state.total} ({share:.0%})"
        if state.details is not None:
            line += f"; {state.details()}"
        line += f"; elapsed {_duration(elapsed)}"
        if 0 < state.done < state.total:
            line += f", ETA {_duration(elapsed / state.done * (state.total - state.done))}"
        stream = self._stream or sys.stderr
        print(line, file=stream, flush=True)
