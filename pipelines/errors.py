"""Errors of runs and the models they call, under tracegrade's root error."""

from __future__ import annotations

from transforms.errors import TracegradeError

__all__ = ["EmbedderError", "JudgeRunFailed", "PrefectServerError", "RunStopped"]


class EmbedderError(TracegradeError):
    """The embedding model could not be loaded or run."""


class JudgeRunFailed(TracegradeError):
    """A judge run ended with failed submissions, or was stopped (auth, circuit breaker)."""


class PrefectServerError(TracegradeError):
    """The temporary Prefect API a run needed could not be started."""


class RunStopped(BaseException):
    """The command was asked to stop (SIGINT or SIGTERM); `signal` names which.

    A BaseException, like KeyboardInterrupt, so that no `except Exception` swallows it and
    every run on the way out records itself as failed and lets go of the database.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by signal {signum}")
        self.signum = signum
