"""Errors of the judge, under tracegrade's root error; each says whether a retry may help."""

from __future__ import annotations

from tracegrade.errors import ConfigError, TracegradeError

__all__ = [
    "BudgetConfigError",
    "JudgeConfigError",
    "JudgeRunFailed",
    "MissingApiKeyError",
]


class JudgeConfigError(ConfigError):
    """The judge configuration breaks a rule; the message names the value and the fix."""


class MissingApiKeyError(JudgeConfigError):
    """A judge model's API key is not in the environment; `variable` names it."""

    def __init__(self, message: str, *, variable: str) -> None:
        super().__init__(message)
        self.variable = variable


class BudgetConfigError(JudgeConfigError):
    """A budget was given for a model the price table does not list."""


class JudgeRunFailed(TracegradeError):
    """A judge run ended with failed submissions, or was stopped (auth, circuit breaker)."""
