"""Nested Parquet trace exports to canonical rows, vectorized.

The file's schema is checked first against what each field may hold; the
needed columns are then cast in one pyarrow step to a normalised nested type
(missing fields become nulls, extra fields are dropped, struct keys of
`steps.input` are sorted) and flattened with Polars expressions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from storage.errors import FileRejected
from storage.inputs.canonical import CANONICAL_SCHEMA, STEP_DTYPE, content_hashes, parse_created_at
from transforms.trace_schema import CANONICAL, STEP, STEP_FILE_FIELDS, file_groups

__all__ = ["iter_parquet_rows"]

_Check = Callable[[pa.DataType], bool]


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _is_number(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _is_list(t: pa.DataType) -> bool:
    return (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    )


_STRING: tuple[str, _Check, pa.DataType] = ("a string", _is_string, pa.large_string())
_BOOL: tuple[str, _Check, pa.DataType] = ("a boolean", pa.types.is_boolean, pa.bool_())
_NUMBER: tuple[str, _Check, pa.DataType] = (
    "a number (integer, float or decimal)",
    _is_number,
    pa.float64(),
)
_INTEGER: tuple[str, _Check, pa.DataType] = ("an integer", pa.types.is_integer, pa.int64())
_STRINGS: tuple[str, _Check, pa.DataType] = (
    "a list of strings",
    lambda t: _is_list(t) and (pa.types.is_null(t.value_type) or _is_string(t.value_type)),
    pa.large_list(pa.large_string()),
)

_SPECS = {
    "string": _STRING,
    "strings": _STRINGS,
    "boolean": _BOOL,
    "number": _NUMBER,
    "integer": _INTEGER,
}
"""What a column of each kind of field may hold, and the type it is read as."""
_TRACE_FIELDS = {
    key: {f.path[1]: _SPECS[f.kind] for f in fields if f.kind != "timestamp"}
    for key, fields in file_groups().items()
    if key not in ("id", "steps")
}
"""The struct columns of a trace and their leaves (`metadata.created_at` has its own check)."""
_STEP_FIELDS = {
    f.name: _SPECS[f.kind] for f in STEP_FILE_FIELDS if f.path == (f.name,) and f.name != "input"
}
"""A step's leaves (`tool.name` and `input` have their own checks)."""
_FROM_STRUCTS = [(f.name, f.path) for f in CANONICAL if len(f.path) == 2]
"""The canonical columns read from a field of a struct column, and where."""


def _mismatch(column: str, found: pa.DataType, expected: str) -> FileRejected:
    return FileRejected(
        "schema_mismatch",
        f"column '{column}' has type {found}, expected {expected}; "
        "re-export the file with that column as the expected type",
    )


def _leaf(column: str, found: pa.DataType, spec: tuple[str, _Check, pa.DataType]) -> pa.DataType:
    expected, check, target = spec
    if pa.types.is_null(found) or check(found):
        return target
    raise _mismatch(column, found, expected)


def _children(column: str, found: pa.DataType) -> dict[str, pa.DataType]:
    """Field types of a struct column (none for an all-null column)."""
    if pa.types.is_null(found):
        return {}
    if not pa.types.is_struct(found):
        raise _mismatch(column, found, "a struct")
    return {found.field(i).name: found.field(i).type for i in range(found.num_fields)}


def _sorted_keys(t: pa.DataType) -> pa.DataType:
    """The same type with every struct's fields in name order, so JSON keys come out sorted."""
    if pa.types.is_struct(t):
        fields = sorted((t.field(i) for i in range(t.num_fields)), key=lambda f: f.name)
        return pa.struct([f.with_type(_sorted_keys(f.type)) for f in fields])
    if _is_list(t):
        return pa.large_list(_sorted_keys(t.value_type))
    return t


def _created_at_type(found: pa.DataType | None) -> pa.DataType:
    if found is None or pa.types.is_null(found) or _is_string(found):
        return pa.large_string()
    if pa.types.is_timestamp(found):
        # Aware values are instants already; naive ones are read as UTC by this cast.
        return pa.timestamp(found.unit, tz="UTC")
    raise _mismatch("metadata.created_at", found, "an ISO-8601 string or a timestamp")


def _input_type(found: pa.DataType | None) -> pa.DataType:
    if found is None or pa.types.is_null(found) or _is_string(found):
        return pa.large_string()
    if pa.types.is_struct(found):
        return _sorted_keys(found)
    raise _mismatch("steps.input", found, "a JSON string or a struct")


def _steps_type(found: pa.DataType | None) -> pa.DataType:
    if found is not None and not pa.types.is_null(found):
        if not _is_list(found):
            raise _mismatch("steps", found, "a list of structs")
        found = found.value_type
    fields = _children("steps.element", found) if found is not None else {}
    tool = fields.get("tool")
    tool_fields = _children("steps.tool", tool) if tool is not None else {}
    name = tool_fields.get("name")
    step = [
        pa.field(key, _leaf(f"steps.{key}", fields[key], spec) if key in fields else spec[2])
        for key, spec in _STEP_FIELDS.items()
    ]
    step.append(
        pa.field(
            "tool",
            pa.struct(
                [
                    (
                        "name",
                        _leaf("steps.tool.name", name, _STRING)
                        if name is not None
                        else pa.large_string(),
                    )
                ]
            ),
        )
    )
    step.append(pa.field("input", _input_type(fields.get("input"))))
    return pa.large_list(pa.struct(step))


def _target_types(schema: pa.Schema) -> dict[str, pa.DataType]:
    """The normalised type of each top-level column; raises FileRejected on a type mismatch."""
    names = list(schema.names)
    for name in ("id", *_TRACE_FIELDS, "steps"):
        if names.count(name) > 1:
            raise FileRejected(
                "schema_mismatch",
                f"column '{name}' appears {names.count(name)} times, expected once; "
                "re-export the file with one column per field",
            )
    present = {field.name: field.type for field in schema}
    targets: dict[str, pa.DataType] = {}
    found_id = present.get("id")
    targets["id"] = _leaf("id", found_id, _STRING) if found_id is not None else pa.large_string()
    for column, spec in _TRACE_FIELDS.items():
        children = _children(column, present[column]) if column in present else {}
        fields = [
            pa.field(
                key, _leaf(f"{column}.{key}", children[key], leaf) if key in children else leaf[2]
            )
            for key, leaf in spec.items()
        ]
        if column == "metadata":
            fields.append(pa.field("created_at", _created_at_type(children.get("created_at"))))
        targets[column] = pa.struct(fields)
    targets["steps"] = _steps_type(present.get("steps"))
    return targets


def _normalised_batches(path: str | Path, batch_rows: int) -> Iterator[pa.Table]:
    """The file's rows in batches, each cast to the normalised layout.

    The schema is checked before the first batch, so a type mismatch rejects the file before
    any row is produced; a batch that cannot be read or cast rejects it later. The file is
    opened by Python, so a name that is not UTF-8 opens too.
    """
    with Path(path).open("rb") as handle:
        yield from _normalised_from(handle, batch_rows)


def _normalised_from(handle: BinaryIO, batch_rows: int) -> Iterator[pa.Table]:
    try:
        parquet = pq.ParquetFile(handle, pre_buffer=False, buffer_size=1 << 20)
        schema = parquet.schema_arrow
    except (pa.ArrowException, OSError) as exc:
        raise FileRejected(
            "unreadable_file",
            f"not a readable Parquet file ({exc}); the file may be truncated or in another "
            "format: re-export it, or give JSON with a .json/.jsonl extension",
        ) from exc
    targets = _target_types(schema)
    present = [name for name in targets if name in schema.names]
    try:
        batches = parquet.iter_batches(batch_size=batch_rows, columns=present)
        for batch in batches:
            yield _normalised(pa.Table.from_batches([batch]), targets, present)
        if parquet.metadata.num_rows == 0:
            yield _normalised(schema.empty_table().select(present), targets, present)
    except (pa.ArrowException, OSError) as exc:
        raise FileRejected(
            "unreadable_file", f"Parquet data could not be read ({exc}); re-export the file"
        ) from exc


def _normalised(table: pa.Table, targets: dict[str, pa.DataType], present: list[str]) -> pa.Table:
    rows = table.num_rows
    arrays: dict[str, pa.ChunkedArray | pa.Array] = {}
    for name, target in targets.items():
        if name not in present or pa.types.is_null(table.schema.field(name).type):
            arrays[name] = pa.nulls(rows, target)
            continue
        try:
            arrays[name] = table.column(name).cast(target)
        except (pa.ArrowException, ValueError) as exc:
            raise FileRejected(
                "schema_mismatch",
                f"column '{name}' of type {table.schema.field(name).type} cannot be read as "
                f"{target} ({exc}); re-export the file with the documented nested layout",
            ) from exc
    normalised = pa.table(arrays)
    try:
        # Parquet readers do not check UTF-8; text Polars cannot decode must stop here.
        normalised.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise FileRejected(
            "unreadable_file",
            f"the file holds invalid data ({exc}); re-export it with UTF-8 text",
        ) from exc
    return normalised


def _step_expr(input_is_struct: bool) -> pl.Expr:
    """A nested step (`tool{name}`, `input` text or a struct) as a canonical step."""
    step = pl.element().struct
    raw_input = step.field("input")
    # json_encode writes "null" for a null struct inside list.eval; keep it null.
    read: dict[str, pl.Expr] = {
        "tool_present": step.field("tool").is_not_null(),
        "input": (
            pl.when(raw_input.is_not_null()).then(raw_input.struct.json_encode())
            if input_is_struct
            else raw_input
        ),
    }
    for f in STEP_FILE_FIELDS:
        if f.name not in read:
            value = step.field(f.path[0])
            read[f.name] = value.struct.field(f.path[1]) if len(f.path) == 2 else value
    return pl.struct(read[f.name].alias(f.name) for f in STEP)


def iter_parquet_rows(
    path: str | Path, batch_rows: int, name: str | None = None
) -> Iterator[pl.DataFrame]:
    """Canonical rows of one nested Parquet trace export, `batch_rows` at a time.

    Args:
        path: The file to read.
        batch_rows: Rows per yielded frame (row groups may make batches smaller).
        name: What to write into `source_file` (default: the path).

    Raises:
        FileRejected: The file is not readable Parquet (`unreadable_file`) or a
            column has a type that cannot hold its field (`schema_mismatch`).
    """
    first_row = 1
    for table in _normalised_batches(path, batch_rows):
        rows = _canonical(table, name or str(path), first_row)
        first_row += rows.height
        yield rows


def _canonical(table: pa.Table, path: str, first_row: int) -> pl.DataFrame:
    step_type = table.schema.field("steps").type.value_type
    input_is_struct = pa.types.is_struct(step_type.field("input").type)
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    created_type = table.schema.field("metadata").type.field("created_at").type
    steps_dtype = pl.List(STEP_DTYPE)
    rows = frame.select(
        *(pl.col(key).struct.field(leaf).alias(name) for name, (key, leaf) in _FROM_STRUCTS),
        source_file=pl.lit(path, dtype=pl.String),
        row_number=pl.int_range(first_row, first_row + pl.len(), dtype=pl.Int64),
        trace_id=pl.col("id").cast(pl.String),
        steps=pl.col("steps")
        .list.eval(_step_expr(input_is_struct))
        .cast(steps_dtype)
        .fill_null(pl.lit([], dtype=steps_dtype)),
    )
    created = rows.get_column("created_at")
    if pa.types.is_timestamp(created_type):
        created = created.cast(pl.Datetime("us", "UTC"))
        raw = created.dt.to_string("%Y-%m-%dT%H:%M:%S%.6f%:z")
    else:
        raw = created.cast(pl.String)
        created = parse_created_at(raw)
    rows = rows.with_columns(
        created_at=created,
        created_at_raw=raw,
        read_rule=pl.lit(None, dtype=pl.String),
        read_reason=pl.lit(None, dtype=pl.String),
    )
    rows = rows.with_columns(content_hash=content_hashes(rows))
    return rows.select(list(CANONICAL_SCHEMA)).cast(pl.Schema(CANONICAL_SCHEMA))
