"""The exit statuses of the `tracegrade` command (the README lists them)."""

from __future__ import annotations

__all__ = [
    "EXIT_CASES_FAILED",
    "EXIT_FAILED",
    "EXIT_LOCKED",
    "EXIT_NOTHING_SCORED",
    "EXIT_OK",
    "EXIT_REGRESSION",
    "EXIT_USAGE",
    "exit_for_signal",
]

EXIT_OK = 0
"""The run completed."""
EXIT_NOTHING_SCORED = 1
"""There was input, but nothing could be scored (every row or file was quarantined)."""
EXIT_USAGE = 2
"""Invalid configuration, arguments, database path or missing input; nothing was done."""
EXIT_LOCKED = 3
"""Another process holds the database."""
EXIT_FAILED = 4
"""The run failed (a judge run with failed submissions, a model that could not load)."""
EXIT_CASES_FAILED = 5
"""`operations --check`: the run completed and at least one case failed its scorer set."""
EXIT_REGRESSION = 6
"""`compare --fail-on`: a difference is beyond a line of the gate and its interval excludes 0."""


def exit_for_signal(signum: int) -> int:
    """128 + the signal's number, as shells report a command stopped by a signal (130 for
    SIGINT, 143 for SIGTERM)."""
    return 128 + signum
