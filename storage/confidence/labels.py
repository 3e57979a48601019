"""Outcome labels for `tracegrade confidence --evaluate` and the report: a file, or a SQL
expression over the stored traces, counted with the stored levels into outcome cells
(`transforms.confidence.level_agreement`) in DuckDB, so a database of any size gives a small frame."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import numpy as np

from storage.confidence.store import DERIVED_TRACE_COLUMNS
from storage.errors import InputError
from storage.names import sql_string
from storage.store.statements import Statements
from transforms.confidence.level_agreement import LEVELS, OutcomeCells

if TYPE_CHECKING:  # Polars loads where a frame is made: --evaluate needs none
    import polars as pl

__all__ = [
    "DEFAULT_LABELS",
    "file_labels",
    "labelled_levels",
    "labelled_trace_rows",
    "level_outcomes",
    "unreadable_labels",
]

DEFAULT_LABELS = "success::INT"
"""The report's labels when none are given: each trace's own metadata.success."""

_READERS = {".csv": "read_csv", ".jsonl": "read_json", ".ndjson": "read_json", ".json": "read_json"}


def file_labels(store: Statements, path: Path, cast: str = "INT") -> str:
    """A SELECT of (trace_id, label) from a labels file: columns trace_id (or id) and label,
    or a trace file whose metadata.success is the label; the label cast to `cast`. A label may
    name its trace by the id its producer gave it (`_producer_ids`)."""
    reader = "read_parquet" if path.suffix == ".parquet" else _READERS.get(path.suffix)
    if reader is None:
        raise InputError(
            f"labels file {path} has extension {path.suffix!r}; give .parquet, .csv, .jsonl or "
            ".json with columns trace_id and label (0/1)"
        )
    columns = {row[0] for row in store.rows(f"DESCRIBE SELECT * FROM {reader}({sql_string(path)})")}
    key = "trace_id" if "trace_id" in columns else "id" if "id" in columns else None
    value = "label" if "label" in columns else "metadata.success" if "metadata" in columns else None
    if key is None or value is None:
        raise InputError(
            f"labels file {path} has columns {sorted(columns)}; it needs trace_id (or id) and "
            "label (0/1), or be a trace file whose metadata.success is the label"
        )
    source = f"{reader}({sql_string(path)})"
    pairs = _producer_ids(store, key, source)
    if not pairs:
        return f"SELECT {key} AS trace_id, ({value})::{cast} AS label FROM {source}"
    store.execute(
        f"CREATE OR REPLACE TEMP TABLE {_IDS} AS "
        "SELECT unnest(?::VARCHAR[]) AS given, unnest(?::VARCHAR[]) AS trace_id",
        [list(pairs), list(pairs.values())],
    )
    return (
        f"SELECT coalesce(m.trace_id, f.{key}::VARCHAR) AS trace_id, ({value})::{cast} AS label "
        f"FROM {source} f LEFT JOIN {_IDS} m ON m.given = f.{key}::VARCHAR"
    )


_IDS = "__label_trace_ids"


def _producer_ids(store: Statements, key: str, source: str) -> dict[str, str]:
    """The labels' trace ids that name a stored trace by the id its producer gave it (the
    OTel trace id as an exporter or a tool's screen shows it: 32 hex digits, any case, dashes or
    `0x`; a Langfuse trace id that is not hex), each with the stored trace's id
    (`transforms.otel.otel_trace_id` of the id as the readers take it: `storage.spans.langfuse`),
    where that trace is stored and the label's own id is not."""
    from storage.spans.langfuse import trace_hex
    from transforms.otel import otel_trace_id

    given = [
        text
        for (text,) in store.rows(
            f"SELECT DISTINCT {key}::VARCHAR FROM {source} WHERE {key} IS NOT NULL "
            f"AND {key}::VARCHAR NOT IN (SELECT trace_id FROM traces)"
        )
    ]
    ours = {text: otel_trace_id(trace_hex(text.strip()) or "") for text in given}
    stored = {
        trace
        for (trace,) in store.rows(
            "SELECT trace_id FROM traces WHERE trace_id IN (SELECT unnest(?::VARCHAR[]))",
            [list(set(ours.values()))],
        )
    }
    return {text: trace for text, trace in ours.items() if trace in stored}


def _checked_file_labels(store: Statements, path: Path) -> str:
    """A SELECT of one (trace_id, label) per trace from a labels file, after checking that
    every label is 0 or 1 and no trace has both (a trace labelled twice alike counts once)."""
    query = file_labels(store, path)
    checked = store.rows(
        f"SELECT trace_id, min(label) AS low, max(label) AS high FROM ({query}) "
        "WHERE label IS NOT NULL GROUP BY trace_id "
        "HAVING low NOT IN (0, 1) OR high NOT IN (0, 1) OR low <> high "
        "ORDER BY trace_id LIMIT 1"
    )
    if checked:
        trace, low, high = checked[0]
        if {low, high} <= {0, 1}:
            raise InputError(f"trace {trace} is labelled both 0 and 1; give it one label")
        raise InputError(
            f"labels must be 0 or 1; trace {trace} has {low if high in (0, 1) else high}"
        )
    return (
        f"SELECT trace_id, max(label) AS label FROM ({query}) WHERE label IS NOT NULL "
        "GROUP BY trace_id"
    )


def _labels_query(store: Statements, labels: str) -> str:
    """A SELECT of (trace_id, label): from the labels file `labels` (checked), else the SQL
    expression `labels` over the stored traces."""
    path = Path(labels)
    if path.is_file():
        return _checked_file_labels(store, path)
    return f"SELECT trace_id, ({labels})::INT AS label FROM traces"


def unreadable_labels(labels: str, error: duckdb.Error) -> InputError:
    """The error of labels that are neither a readable file nor an expression that runs."""
    return InputError(
        f"labels {labels!r} are neither a readable labels file nor a SQL expression over the "
        f"traces table ({str(error).splitlines()[0]}); give a file with trace_id and label, "
        "or an expression such as 'success::INT'"
    )


_CELLS = "__outcome_cells"

_LEVEL_CODE = (
    "CASE level "
    + " ".join(f"WHEN '{name}' THEN {index}" for index, name in enumerate(LEVELS))
    + " ELSE -1 END"
)
"""A level's index in LEVELS (-1 for a name that is none of them)."""


def level_outcomes(store: Statements, levels: str, labels: str) -> tuple[OutcomeCells, int]:
    """Outcome cells (aggregate, level, good, failed) of the levels that have a label, and how
    many levels have none. `levels` is a relation with trace_id, aggregate and level (one row
    per trace); `labels` a labels file or a SQL expression over `traces` (one row per trace).

    Raises:
        InputError: the file cannot be read, the expression fails, a label is not 0/1, or a
            trace has both labels.
    """
    try:
        query = _labels_query(store, labels)
        store.execute(
            f"CREATE OR REPLACE TEMP TABLE {_CELLS} AS SELECT c.aggregate::DOUBLE AS aggregate, "
            "c.level::VARCHAR AS level, sum(l.label)::BIGINT AS good, "
            "(count(l.label) - sum(l.label))::BIGINT AS failed, "
            "count(*) - count(l.label) AS unlabelled, "
            "any_value(c.trace_id || ' has ' || l.label) FILTER (l.label NOT IN (0, 1)) AS bad "
            f"FROM ({levels}) c LEFT JOIN ({query}) l USING (trace_id) GROUP BY ALL"
        )
    except duckdb.Error as exc:
        raise unreadable_labels(labels, exc) from None
    try:
        ((unlabelled, bad),) = store.rows(
            f"SELECT coalesce(sum(unlabelled), 0)::BIGINT, min(bad) FROM {_CELLS}"
        )
        if bad is not None:
            raise InputError(f"labels must be 0 or 1; trace {bad}")
        # In the order the cells sort ((aggregate, level) is unique a row), as columns: with
        # a continuous confidence there is about a cell a trace.
        found = store.numpy_columns(
            f"SELECT aggregate, {_LEVEL_CODE} AS level_code, good, failed FROM {_CELLS} "
            "WHERE good IS NOT NULL ORDER BY aggregate, level"
        )
    finally:
        store.execute(f"DROP TABLE IF EXISTS {_CELLS}")
    cells = OutcomeCells(
        np.asarray(found["aggregate"], dtype=np.float64),
        np.asarray(found["level_code"], dtype=np.int64),
        np.asarray(found["good"], dtype=np.int64),
        np.asarray(found["failed"], dtype=np.int64),
    )
    return cells, int(unlabelled)


def labelled_levels(store: Statements, labels: str, source: str) -> tuple[OutcomeCells, int]:
    """Outcome cells of the stored levels of `source` (derived or factors) that have a label,
    and how many of its levels have none (`level_outcomes`)."""
    if source not in ("derived", "factors"):
        raise InputError(f"source {source!r} is not a level source; give derived or factors")
    levels = (
        "SELECT trace_id, aggregate, level FROM confidence_traces "
        f"WHERE source = {sql_string(source)}"
    )
    return level_outcomes(store, levels, labels)


def labelled_trace_rows(store: Statements, labels: str) -> tuple[pl.DataFrame, int]:
    """The stored traces that have a label in `labels` (a file or a SQL expression over
    `traces`, as `level_outcomes` takes them), as derived mode reads them: trace_id,
    content_hash, confidence, result_summary, objective, steps (the fields derived mode
    reads) and label (1 good, 0 failed), sorted by trace_id; and how many stored traces have
    no label. For fitting factor weights (`tracegrade confidence --fit --fit-weights`), which
    scores these traces again: they are held in memory.

    Raises:
        InputError: as `level_outcomes`.
    """
    try:
        query = _labels_query(store, labels)
        bad = store.rows(
            f"SELECT trace_id, label FROM ({query}) WHERE label NOT IN (0, 1) "
            "ORDER BY trace_id LIMIT 1"
        )
        if bad:
            raise InputError(f"labels must be 0 or 1; trace {bad[0][0]} has {bad[0][1]}")
        rows = store.sql(
            f"SELECT {DERIVED_TRACE_COLUMNS}, l.label::BIGINT AS label FROM traces t "
            f"JOIN ({query}) l USING (trace_id) WHERE l.label IS NOT NULL ORDER BY t.trace_id"
        )
        ((stored,),) = store.rows("SELECT count(*) FROM traces")
    except duckdb.Error as exc:
        raise unreadable_labels(labels, exc) from None
    return rows, int(stored) - rows.height
