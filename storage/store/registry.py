"""The one open store per database in this process, shared by a flow's tasks."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from storage.store.duckdb_store import DuckDBStore
from storage.store.locations import locate

__all__ = ["held_store", "store_for"]

_open: dict[str, DuckDBStore] = {}


def _key(db: str | Path) -> str:
    return locate(db).target


@contextmanager
def held_store(db: str | Path) -> Iterator[DuckDBStore]:
    """Open `db` for writing for the duration of the block (fails fast if another process holds it)."""
    key = _key(db)
    if key in _open:
        yield _open[key]
        return
    store = DuckDBStore(key)
    _open[key] = store
    try:
        yield store
    finally:
        del _open[key]
        store.close()


def store_for(db: str | Path) -> DuckDBStore:
    """The store a running flow holds for `db`."""
    try:
        return _open[_key(db)]
    except KeyError:
        raise RuntimeError(f"no store is open for {db}; run tasks inside held_store()") from None
