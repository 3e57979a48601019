"""Outcome labels for `tracegrade confidence --evaluate`: a file, or a SQL expression over
the stored traces; joined with the stored levels of one source."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

from storage._names import sql_string
from storage.duckdb_store import DuckDBStore
from storage.errors import InputError

__all__ = ["labelled_levels"]

_READERS = {".csv": "read_csv", ".jsonl": "read_json", ".ndjson": "read_json", ".json": "read_json"}


def _file_labels(store: DuckDBStore, path: Path) -> str:
    """A SELECT of (trace_id, label) from a labels file: columns trace_id (or id) and label,
    or a trace file whose metadata.success is the label."""
    reader = "read_parquet" if path.suffix == ".parquet" else _READERS.get(path.suffix)
    if reader is None:
        raise InputError(
            f"labels file {path} has extension {path.suffix!r}; give .parquet, .csv, .jsonl or "
            ".json with columns trace_id and label (0/1)"
        )
    columns = set(store.sql(f"DESCRIBE SELECT * FROM {reader}({sql_string(path)})")["column_name"])
    key = "trace_id" if "trace_id" in columns else "id" if "id" in columns else None
    value = "label" if "label" in columns else "metadata.success" if "metadata" in columns else None
    if key is None or value is None:
        raise InputError(
            f"labels file {path} has columns {sorted(columns)}; it needs trace_id (or id) and "
            "label (0/1), or be a trace file whose metadata.success is the label"
        )
    return f"SELECT {key} AS trace_id, ({value})::INT AS label FROM {reader}({sql_string(path)})"


def labelled_levels(store: DuckDBStore, labels: str, source: str) -> tuple[pl.DataFrame, int]:
    """(trace_id, aggregate, level, label) of the stored levels of `source` that have a label,
    and how many levels have none. `labels` is a file or a SQL expression over `traces`.

    Raises:
        InputError: the file cannot be read, or the expression fails or is not 0/1.
    """
    path = Path(labels)
    if path.is_file():
        query = _file_labels(store, path)
    else:
        query = f"SELECT trace_id, ({labels})::INT AS label FROM traces"
    try:
        joined = store.sql(
            f"SELECT c.trace_id, c.aggregate, c.level, l.label FROM confidence_traces c "
            f"LEFT JOIN ({query}) l USING (trace_id) WHERE c.source = ? ORDER BY c.trace_id",
            [source],
        )
    except duckdb.Error as exc:
        raise InputError(
            f"labels {labels!r} are neither a readable labels file nor a SQL expression over "
            f"the traces table ({str(exc).splitlines()[0]}); give a file with trace_id and "
            "label, or an expression such as 'success::INT'"
        ) from None
    bad = joined.filter(pl.col("label").is_not_null() & ~pl.col("label").is_in([0, 1]))
    if not bad.is_empty():
        raise InputError(f"labels must be 0 or 1; trace {bad['trace_id'][0]} has {bad['label'][0]}")
    labelled = joined.filter(pl.col("label").is_not_null())
    return labelled, joined.height - labelled.height
