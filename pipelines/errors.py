"""Errors of runs and the models they call, under tracegrade's root error."""

from __future__ import annotations

from transforms.errors import TracegradeError

__all__ = [
    "CustomMetricError",
    "EmbedderError",
    "JudgeRunFailed",
    "MetricFailedError",
    "ModelCallError",
    "PrefectServerError",
    "RegressionFound",
    "RunStopped",
    "ServerUnavailable",
    "UnreadableAnswer",
]


class EmbedderError(TracegradeError):
    """The embedding model could not be loaded or run."""


class JudgeRunFailed(TracegradeError):
    """A judge run ended with failed submissions, or was stopped (auth, circuit breaker)."""


class MetricFailedError(TracegradeError):
    """A metric gave no score for the submission (the Evaluator raises it, seed FR-010).

    Attributes:
        metric_name: the metric, as configured.
        status: the judge status it ended with (`rate_limited`, `metric_error`, ...).
        attempts: requests made for it (0 for a metric that needs no model).
        detail: the last error.
    """

    def __init__(
        self, message: str, *, metric_name: str, status: str, attempts: int, detail: str
    ) -> None:
        super().__init__(message)
        self.metric_name = metric_name
        self.status = status
        self.attempts = attempts
        self.detail = detail


_TRANSIENT = frozenset({"rate_limited", "timeout", "provider_error", "parse_error", "refusal"})


class ModelCallError(MetricFailedError):
    """A judge model gave no valid judgement after its attempts; names the provider, the model,
    the metric and the attempts. `transient` says whether trying later may help (not after an
    authentication or quota error)."""

    def __init__(
        self,
        *,
        metric_name: str,
        model: str,
        status: str,
        attempts: int,
        detail: str,
    ) -> None:
        self.provider = model.partition(":")[0]
        self.model = model
        super().__init__(
            f"metric {metric_name}: model {model} (provider {self.provider}) gave no judgement "
            f"after {attempts} attempt{'s' if attempts != 1 else ''}: {status}: {detail}",
            metric_name=metric_name,
            status=status,
            attempts=attempts,
            detail=detail,
        )
        self.transient = status in _TRANSIENT

    @property
    def retry_count(self) -> int:
        """Retries made after the first attempt (the original evaluator's attribute)."""
        return max(0, self.attempts - 1)


class CustomMetricError(MetricFailedError):
    """A metric that needs no model raised, or returned something that is not a score."""

    def __init__(self, *, metric_name: str, status: str, detail: str) -> None:
        super().__init__(
            f"metric {metric_name}: {status}: {detail}",
            metric_name=metric_name,
            status=status,
            attempts=0,
            detail=detail,
        )


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


class RegressionFound(TracegradeError):
    """A nightly run's comparison with the run before it crossed a line of the gate: the
    check's task fails, not the flow (pipelines.compare)."""


class ServerUnavailable(TracegradeError):
    """Phoenix or an OTLP receiver did not answer a request after every retry, or answered it
    with an error."""


class UnreadableAnswer(TracegradeError):
    """An answer that arrived and cannot be read: not JSON, or not a page of spans. Tried
    again like a server error."""
