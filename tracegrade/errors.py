"""The error hierarchy: one root, and a mark on each error saying whether a retry may help."""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "EmbedderError",
    "InputError",
    "StoreLockedError",
    "TracegradeError",
]


class TracegradeError(Exception):
    """Root of every error tracegrade raises on purpose."""

    transient: bool = False
    """True when the same call may succeed if tried again."""


class ConfigError(TracegradeError):
    """A configuration file or value is invalid; the message names the value and the fix."""


class InputError(TracegradeError):
    """Input that cannot be processed at all (no files found, unsupported extension)."""


class EmbedderError(TracegradeError):
    """The embedding model could not be loaded or run."""


class StoreLockedError(TracegradeError):
    """Another process holds the DuckDB file; the message names the file and the holder."""

    transient = True
