"""Errors of input files and of the database, under tracegrade's root error."""

from __future__ import annotations

from transforms.errors import Rejection, TracegradeError

__all__ = [
    "FileRejected",
    "InputError",
    "NoInputFilesError",
    "RecordRejected",
    "StalePlanError",
    "StoreDamaged",
    "StoreLockedError",
    "StoreOpenError",
    "UnrecognisedFile",
]


class InputError(TracegradeError):
    """Input that cannot be processed at all (no files found, unsupported extension)."""


class FileRejected(Rejection):
    """A whole file cannot be read; its quarantine row carries the rule and the reason."""


class RecordRejected(Rejection, ValueError):
    """One record (a line, a message, a table row) cannot be read: invalid_json, too_deep,
    invalid_text. Also a ValueError, as the JSON errors it stands for are."""


class UnrecognisedFile(InputError):
    """A file that is not of the kind it was read as; the message says what it holds."""


class NoInputFilesError(InputError):
    """A folder or glob pattern that exists but holds no input file yet: an error where a
    person named it, nothing to do for a scheduled run of an export folder (`score_traces`'s
    `empty_ok`)."""


class StoreLockedError(TracegradeError):
    """Another process holds the DuckDB file; the message names the file and the holder."""

    transient = True


class StoreOpenError(TracegradeError):
    """The database path is not a DuckDB file (or is a folder); the message names it."""


class StalePlanError(TracegradeError):
    """Another run stored traces after this run planned its commit; nothing was written, and
    the run plans again (pipelines.score) with the database held."""


class StoreDamaged(TracegradeError):
    """A data file the store's catalog names is missing or damaged; the message names it."""
