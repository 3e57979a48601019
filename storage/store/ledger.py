"""The file ledger (`files`) and the run log (`runs`) as a run reads them before it starts:
which input files earlier runs stored, and whether a run is still open. Plain tuples, no
Polars, so that a rerun with nothing to do finds that out quickly (`pipelines.score`)."""

from __future__ import annotations

from pathlib import Path

from storage.names import path_text
from storage.store.duckdb_store import DuckDBStore
from storage.store.hashing import file_sha256

__all__ = ["in_ledger", "open_runs", "stored_files"]


def stored_files(store: DuckDBStore) -> set[tuple[str, str]]:
    """(path, content hash) of the files earlier runs loaded or quarantined whole; a file a
    backfill read in part is not among them (its other rows wait for a later run)."""
    rows = store.rows("SELECT path, content_hash FROM files WHERE status <> 'partial'")
    return {(path, content_hash) for path, content_hash in rows}


def in_ledger(path: Path, stored: set[tuple[str, str]]) -> bool:
    """The file's (name, content hash) is among `stored`; a file that cannot be read is not
    (it is read, and quarantined as unreadable)."""
    try:
        return (path_text(path), file_sha256(path)) in stored
    except OSError:
        return False


def open_runs(store: DuckDBStore) -> int:
    """Runs recorded as running: in progress in another process, or stopped by a crash (the
    next run closes them)."""
    ((count,),) = store.rows("SELECT count(*) FROM runs WHERE status = 'running'")
    return int(count)
