"""DuckDB extensions from the registry packages pinned with DuckDB (constraints.txt), loaded
from their files: never downloaded at run time."""

from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path

import duckdb

from storage.errors import StoreOpenError
from storage.names import sql_string

__all__ = ["extension_file", "load_extension"]

_PACKAGES = {
    "ducklake": "duckdb_extension_ducklake",
    "sqlite_scanner": "duckdb_extension_sqlite",
    "postgres_scanner": "duckdb_extension_postgres",
}
"""Each extension's name as DuckDB knows it, and the module of the package that ships it."""


def load_extension(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Load the extension `name` into `con` from its installed package.

    Raises:
        StoreOpenError: the package is not installed, or has no file for this DuckDB.
    """
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute(f"LOAD {sql_string(extension_file(name))}")


def extension_file(name: str) -> Path:
    """The file DuckDB loads the extension `name` from (`LOAD 'path'` in any DuckDB 1.5.5
    session), named as DuckDB expects.

    Raises:
        StoreOpenError: the package is not installed, or has no file for this DuckDB.
    """
    module = _PACKAGES[name]
    package = module.replace("_", "-")
    version = duckdb.__version__
    install = f"install it with: pip install '{package}=={version}' (make install does)"
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise StoreOpenError(f"DuckLake storage needs the Python package {package}; {install}")
    folder = Path(spec.origin).parent / "extensions" / f"v{version}"
    found = sorted(folder.glob("*.duckdb_extension"))
    if not found:
        raise StoreOpenError(f"{package} has no extension for DuckDB {version}; {install}")
    return _under_its_name(found[0], name)


def _under_its_name(source: Path, name: str) -> Path:
    """`source`, or a link to it named `<name>.duckdb_extension`: DuckDB takes an extension's
    name from its file name, and the sqlite and postgres packages name theirs differently."""
    wanted = f"{name}.duckdb_extension"
    if source.name == wanted:
        return source
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    for base in (Path(cache), Path(tempfile.gettempdir())):
        folder = base / "tracegrade" / "duckdb-extensions" / source.parent.name
        link = folder / wanted
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if not (link.is_symlink() and link.resolve() == source.resolve()):
                fresh = folder / f".{wanted}.{os.getpid()}"
                fresh.unlink(missing_ok=True)
                fresh.symlink_to(source)
                fresh.replace(link)
            return link
        except OSError:
            continue
    raise StoreOpenError(f"cannot link {source} as {wanted}: no writable cache folder")
