"""The root of every error tracegrade raises on purpose, and the configuration errors.

Each layer has its own `errors.py` under this root: `storage.errors` (input and database),
`pipelines.errors` (runs, models, judgements). Input that breaks a rule is a `Rejection`,
whose rule and reason become a quarantine row. Each error says whether a retry may help
(`transient`).
"""

from __future__ import annotations

__all__ = [
    "BudgetConfigError",
    "ConfigError",
    "JudgeConfigError",
    "MissingApiKeyError",
    "ModelFormatError",
    "PageError",
    "ProviderPackageError",
    "Rejection",
    "TraceRejected",
    "TracegradeError",
    "WeightValidationError",
]


class TracegradeError(Exception):
    """Root of every error tracegrade raises on purpose."""

    transient: bool = False
    """True when the same call may succeed if tried again."""


class Rejection(TracegradeError):
    """Input that breaks one of tracegrade's rules, said as the quarantine says it: `rule` is the
    rule's name (the `rule` column), `reason` what was seen and how to fix it. Every rejection
    of a file, a record or a trace is one of these (`storage.errors` has the file's and the
    record's)."""

    def __init__(self, rule: str, reason: str) -> None:
        super().__init__(reason)
        self.rule = rule
        self.reason = reason


class TraceRejected(Rejection):
    """A trajectory (a chat record, a SWE-agent run, an Inspect sample) breaks a rule."""


class ConfigError(TracegradeError):
    """A configuration file or value is invalid; the message names the value and the fix."""


class JudgeConfigError(ConfigError, ValueError):
    """The judge configuration breaks a rule; the message names the value and the fix.

    Also a ValueError, as the original evaluator's configuration errors are, so that callers
    written for it (`except ValueError`) still catch it.
    """


class WeightValidationError(JudgeConfigError):
    """The metric weights break a rule: negative, not summing to 1.0, or given for some
    metrics only."""


class ModelFormatError(JudgeConfigError):
    """A model is not "provider:model-name", or names a provider that is not known."""


class MissingApiKeyError(JudgeConfigError):
    """A judge model's API key is not in the environment; `variable` names it."""

    def __init__(self, message: str, *, variable: str) -> None:
        super().__init__(message)
        self.variable = variable


class ProviderPackageError(JudgeConfigError):
    """A judge model's provider needs a package that is not installed; `package` is what to
    install (e.g. `pydantic-ai-slim[google]`)."""

    def __init__(self, message: str, *, provider: str, package: str) -> None:
        super().__init__(message)
        self.provider = provider
        self.package = package


class BudgetConfigError(JudgeConfigError):
    """A budget was given for a model the price table does not list."""


class PageError(TracegradeError):
    """A page of spans that Phoenix answered and tracegrade cannot read."""
