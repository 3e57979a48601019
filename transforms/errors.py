"""The root of every error tracegrade raises on purpose, and the configuration errors.

Each layer has its own `errors.py` under this root: `storage.errors` (input and database),
`pipelines.errors` (runs, models). Each error says whether a retry may help (`transient`).
"""

from __future__ import annotations

__all__ = [
    "BudgetConfigError",
    "ConfigError",
    "JudgeConfigError",
    "MissingApiKeyError",
    "TracegradeError",
]


class TracegradeError(Exception):
    """Root of every error tracegrade raises on purpose."""

    transient: bool = False
    """True when the same call may succeed if tried again."""


class ConfigError(TracegradeError):
    """A configuration file or value is invalid; the message names the value and the fix."""


class JudgeConfigError(ConfigError):
    """The judge configuration breaks a rule; the message names the value and the fix."""


class MissingApiKeyError(JudgeConfigError):
    """A judge model's API key is not in the environment; `variable` names it."""

    def __init__(self, message: str, *, variable: str) -> None:
        super().__init__(message)
        self.variable = variable


class BudgetConfigError(JudgeConfigError):
    """A budget was given for a model the price table does not list."""
