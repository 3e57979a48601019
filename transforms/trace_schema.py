"""The canonical trace, defined once; every form of it is derived from the fields here.

A trace file (docs/input-format.md) holds a trace as a nested object (`id`, `metadata`, `task`,
`steps`, `outcome`); a reader turns each into one canonical row; a run stages the rows and
stores their content in `trace_rows`; the content hash is taken of their JSON. Each of those
forms is computed from `CANONICAL` and `STEP` below, in the manner of a dataframely schema: a
field says its name, its kind, where a trace file holds it, whether a stored row may leave it
null, and whether the content hash covers it.

- Polars: `canonical_polars_schema()`, `step_polars_dtype()` (what every reader returns);
- Arrow: `nested_arrow_schema()` (the trace Parquet the importers write), `step_arrow_type()`;
- the nested file: `file_groups()`, `STEP_FILE_FIELDS` (what the JSON and Parquet readers
  check, with the kinds each field accepts), `nested_record()` and `nested_step()` (a trace
  object from canonical values, as the chat mapping makes one);
- SQL: `STEP_TYPE_SQL`, `sql_columns()` (the DuckDB types of `trace_rows`);
- JSON: `HASHED`, the fields and order of the object the content hash is taken of.

Polars and pyarrow are imported by the functions that build their types, never by this module,
so a command that only needs the SQL schema loads neither.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

__all__ = [
    "CANONICAL",
    "HASHED",
    "STEP",
    "STEP_FILE_FIELDS",
    "STEP_TYPE_SQL",
    "Field",
    "canonical_polars_schema",
    "file_groups",
    "nested_arrow_schema",
    "nested_record",
    "nested_step",
    "sql_columns",
    "step_arrow_type",
    "step_polars_dtype",
]

Kind = Literal["string", "strings", "integer", "number", "boolean", "timestamp", "steps"]


@dataclass(frozen=True)
class Field:
    """One column of the canonical row (or one field of a step)."""

    name: str
    kind: Kind
    path: tuple[str, ...] = ()
    """Where a trace file holds it (`("metadata", "agent_id")`); empty where reading makes it."""
    nullable: bool = True
    """Whether a stored row may hold null (false: `NOT NULL` in `trace_rows`)."""
    hashed: bool = False
    """Part of the content the content hash covers (the trace as its producer wrote it)."""

    @property
    def label(self) -> str:
        """The field as a reason names it: its dotted path in the file."""
        return ".".join(self.path) if self.path else self.name


STEP: tuple[Field, ...] = (
    Field("step_id", "integer", ("step_id",)),
    Field("type", "string", ("type",)),
    Field("content", "string", ("content",)),
    Field("tool_present", "boolean"),
    Field("tool_name", "string", ("tool", "name")),
    Field("input", "string", ("input",)),
    Field("output_summary", "string", ("output_summary",)),
    Field("latency_ms", "number", ("latency_ms",)),
)
"""A step's fields, in order. `tool_present` is whether the step has a `tool` object; `input`
is JSON text (an object in the file is serialised with sorted keys)."""

CANONICAL: tuple[Field, ...] = (
    Field("source_file", "string", nullable=False),
    Field("row_number", "integer", nullable=False),
    Field("trace_id", "string", ("id",), nullable=False, hashed=True),
    Field("created_at", "timestamp", ("metadata", "created_at"), nullable=False, hashed=True),
    Field("created_at_raw", "string"),
    Field("agent_id", "string", ("metadata", "agent_id"), hashed=True),
    Field("task_domain", "string", ("metadata", "task_domain"), hashed=True),
    Field("success", "boolean", ("metadata", "success"), hashed=True),
    Field("objective", "string", ("task", "objective"), nullable=False, hashed=True),
    Field("result_summary", "string", ("outcome", "result_summary"), hashed=True),
    Field("confidence", "number", ("outcome", "confidence"), nullable=False, hashed=True),
    Field("steps", "steps", ("steps",), nullable=False, hashed=True),
    Field("content_hash", "string", nullable=False),
    Field("read_rule", "string"),
    Field("read_reason", "string"),
    Field("outcome_unknown", "boolean", ("metadata", "outcome_unknown")),
    Field("agent_version", "string", ("metadata", "agent_version")),
    Field("tags", "strings", ("metadata", "tags")),
)
"""The canonical row, in column order: what every reader returns for every record it reads.
`created_at_raw` is the timestamp as received, `read_rule` and `read_reason` say why a record
could not be read, `outcome_unknown` is true where the producer recorded no outcome (SPEC 1;
then a null `success` is the outcome's value, not a missing field). `agent_version` is the
version or release of the agent that wrote the trace, as its producer tags it (OTel
`service.version`, Langfuse `version` or `release`), and `tags` the labels it was given
(Langfuse's trace tags, OpenInference's `tag.tags`, a trace file's `metadata.tags`), both for
selections such as `tracegrade compare`'s; they are stored but not hashed: the same content
tagged otherwise is the same trace. Nullability is that of a stored row, after validation."""

FILE_KEYS = ("id", "metadata", "task", "steps", "outcome")
"""The top-level keys of a trace object, in the order a trace file writes them."""

HASHED: tuple[str, ...] = tuple(f.name for f in CANONICAL if f.hashed)
"""The content hash's JSON object: these fields in this order (docs/input-format.md)."""

STEP_FILE_FIELDS: tuple[Field, ...] = tuple(f for f in STEP if f.path)
"""The step fields a trace file holds (`tool_present` is read from the `tool` object)."""

_BY_NAME = {f.name: f for f in CANONICAL}

_SQL = {
    "string": "VARCHAR",
    "strings": "VARCHAR[]",
    "integer": "BIGINT",
    "number": "DOUBLE",
    "boolean": "BOOLEAN",
    "timestamp": "TIMESTAMPTZ",
}

STEP_TYPE_SQL = "STRUCT(" + ", ".join(f"{f.name} {_SQL[f.kind]}" for f in STEP) + ")"
"""A step as DuckDB stores it (`trace_rows.steps` is a list of these)."""


def _sql_type(kind: Kind) -> str:
    return f"{STEP_TYPE_SQL}[]" if kind == "steps" else _SQL[kind]


def sql_columns(names: Iterable[str], indent: str = "    ") -> str:
    """Column definitions of `trace_rows` for the canonical fields `names`, one per line,
    each ending with a comma: `trace_id VARCHAR NOT NULL,`."""
    lines = []
    for name in names:
        f = _BY_NAME[name]
        lines.append(f"{indent}{name} {_sql_type(f.kind)}{'' if f.nullable else ' NOT NULL'},")
    return "\n".join(lines)


def file_groups(fields: Iterable[Field] = CANONICAL) -> dict[str, tuple[Field, ...]]:
    """The fields a trace file holds, by top-level key in `FILE_KEYS` order: `{"id":
    (trace_id,), "metadata": (created_at, ...), ...}`."""
    held = [f for f in fields if f.path]
    return {key: tuple(f for f in held if f.path[0] == key) for key in FILE_KEYS}


@cache
def step_polars_dtype() -> pl.Struct:
    """A canonical step as a Polars struct."""
    import polars as pl

    return pl.Struct({f.name: _polars(f.kind) for f in STEP})


@cache
def canonical_polars_schema() -> dict[str, pl.DataType]:
    """Column names and Polars types of the canonical frame, in order."""
    return {f.name: _polars(f.kind) for f in CANONICAL}


def _polars(kind: Kind) -> pl.DataType:
    import polars as pl

    if kind == "steps":
        return pl.List(step_polars_dtype())
    types: dict[str, pl.DataType] = {
        "string": pl.String(),
        "strings": pl.List(pl.String()),
        "integer": pl.Int64(),
        "number": pl.Float64(),
        "boolean": pl.Boolean(),
        "timestamp": pl.Datetime("us", "UTC"),
    }
    return types[kind]


def _arrow(kind: Kind, large: bool) -> pa.DataType:
    import pyarrow as pa

    text = pa.large_string() if large else pa.string()
    types = {
        "string": text,
        "strings": pa.list_(text),
        "integer": pa.int64(),
        "number": pa.float64(),
        "boolean": pa.bool_(),
        "timestamp": pa.timestamp("us", tz="UTC"),
    }
    return types[kind]


@cache
def step_arrow_type(*, large: bool = False) -> pa.StructType:
    """A canonical step (flat: `tool_present`, `tool_name`) as an Arrow struct; `large` takes
    large strings."""
    import pyarrow as pa

    return pa.struct([(f.name, _arrow(f.kind, large)) for f in STEP])


def _nested(fields: Iterable[Field], depth: int) -> list[tuple[str, pa.DataType]]:
    """Arrow fields of `fields` below `depth` levels of their paths, grouped by the next key in
    the order each group first appears."""
    import pyarrow as pa

    groups: dict[str, list[Field]] = {}
    for f in fields:
        groups.setdefault(f.path[depth], []).append(f)
    out: list[tuple[str, pa.DataType]] = []
    for key, members in groups.items():
        if len(members) == 1 and len(members[0].path) == depth + 1:
            f = members[0]
            kind = pa.list_(pa.struct(_nested(STEP_FILE_FIELDS, 0))) if f.kind == "steps" else None
            out.append((key, kind or _arrow(f.kind, large=False)))
        else:
            out.append((key, pa.struct(_nested(members, depth + 1))))
    return out


@cache
def nested_arrow_schema() -> pa.Schema:
    """A trace as a trace file nests it (what `tracegrade score` reads from Parquet and the
    importers write): `id`, `metadata{...}`, `task{objective}`, `steps[{..., tool{name},
    ...}]`, `outcome{...}`."""
    import pyarrow as pa

    ordered = [f for fields in file_groups().values() for f in fields]
    return pa.schema(_nested(ordered, 0))


def _nesting(fields: Iterable[Field]) -> tuple[tuple[str, str, str | None], ...]:
    return tuple((f.name, f.path[0], f.path[1] if len(f.path) == 2 else None) for f in fields)


_TRACE_NESTING = _nesting(f for f in CANONICAL if f.path)
_STEP_NESTING = _nesting(STEP_FILE_FIELDS)


def _nest(
    values: dict[str, Any], nesting: tuple[tuple[str, str, str | None], ...]
) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for name, key, leaf in nesting:
        if leaf is None:
            record[key] = values.get(name)
        else:
            record.setdefault(key, {})[leaf] = values.get(name)
    for _, key, leaf in nesting:
        group = record[key]
        if leaf is not None and group is not None and all(v is None for v in group.values()):
            record[key] = None
    return record


def nested_step(values: dict[str, Any]) -> dict[str, Any]:
    """A step as a trace file writes it, from canonical step values (`tool_name` becomes
    `tool: {name}`, and no tool where it is null); a field not given is null."""
    return _nest(values, _STEP_NESTING)


def nested_record(values: dict[str, Any]) -> dict[str, Any]:
    """A trace object as a trace file writes it, from canonical values by column name
    (`trace_id` becomes `id`, `agent_id` `metadata.agent_id`, ...; `steps` as given)."""
    return _nest(values, _TRACE_NESTING)
