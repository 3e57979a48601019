"""File names as text every table can hold, and text as an SQL literal."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["path_text", "sql_string"]


def path_text(path: str | Path) -> str:
    """The path as text that UTF-8, and so Parquet and DuckDB, can store.

    A file name that is not UTF-8 (Linux allows any bytes) arrives from the file system with
    its undecodable bytes as lone surrogates; those bytes appear as `\\xNN` instead, so the
    file is still read, scored and named recognisably in the ledger and the quarantine.
    """
    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(text).decode("utf-8", "backslashreplace")
    return text


def sql_string(text: str | Path) -> str:
    """`text` (a path: its text) as an SQL string literal, quoted."""
    return "'" + str(text).replace("'", "''") + "'"
