"""Where a tracegrade database lives: one DuckDB file (the default), or a DuckLake, its
catalog in SQLite or PostgreSQL and its data as Parquet files in a folder or object storage
(docs/storage.md, "Three setups")."""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

from storage.errors import StoreOpenError

__all__ = ["Location", "check_file", "locate"]

LAKE_PREFIX = "ducklake:"


@dataclass(frozen=True)
class Location:
    """A database as `--db` names it."""

    target: str
    """What DuckDB attaches: the file's path, or `ducklake:sqlite:/abs/path` /
    `ducklake:postgres:<libpq connection string>`."""
    anchor: Path
    """The local file the run work folders, run locks and spill folder sit beside: the DuckDB
    file or the SQLite catalog; for a PostgreSQL catalog, a name in the temporary folder."""
    catalog: str | None
    """None for a DuckDB file; `sqlite` or `postgres` for a DuckLake."""

    def exists(self) -> bool:
        """True when the database is there to read (a PostgreSQL catalog is taken to be)."""
        return self.catalog == "postgres" or self.anchor.exists()

    def default_data_path(self) -> str | None:
        """Where a new DuckLake keeps its Parquet files unless told: beside a SQLite catalog
        (`<catalog>.files/`); a PostgreSQL catalog has no local place, so it must be told."""
        if self.catalog == "sqlite":
            return f"{self.anchor}.files/"
        return None


def locate(db: str | Path) -> Location:
    """The location `db` names: a DuckDB file's path, `ducklake:sqlite:PATH` or
    `ducklake:postgres:CONNINFO`.

    Raises:
        StoreOpenError: a `ducklake:` name of another catalog kind, or without its part after.
    """
    text = str(db)
    if not text.startswith(LAKE_PREFIX):
        path = Path(text) if text == ":memory:" else Path(text).expanduser().resolve()
        return Location(str(path), path, None)
    kind, _, rest = text[len(LAKE_PREFIX) :].partition(":")
    if kind == "sqlite" and rest:
        path = Path(rest).expanduser().resolve()
        return Location(f"{LAKE_PREFIX}sqlite:{path}", path, "sqlite")
    if kind == "postgres" and rest:
        digest = hashlib.sha256(rest.encode()).hexdigest()[:16]
        anchor = Path(tempfile.gettempdir()) / "tracegrade" / f"lake-{digest}"
        return Location(f"{LAKE_PREFIX}postgres:{rest}", anchor, "postgres")
    raise StoreOpenError(
        f"--db {text!r}: a DuckLake is ducklake:sqlite:PATH (a SQLite catalog file) or "
        "'ducklake:postgres:dbname=NAME host=HOST' (a PostgreSQL catalog)"
    )


def check_file(path: Path, read_only: bool) -> None:
    """Refuse a folder; make a new file's folder; remove an empty file left by a killed run."""
    if path.is_dir():
        raise StoreOpenError(
            f"database {path} is a folder; give the path of a DuckDB file, "
            f"for example {path / 'scores.duckdb'}"
        )
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
        # A run killed while DuckDB created the file can leave it empty: nothing was ever
        # committed to it, and DuckDB refuses to open it, so it is started afresh.
        if path.exists() and path.stat().st_size == 0:
            path.unlink()
