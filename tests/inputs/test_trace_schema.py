"""The canonical trace is defined once: every form of it (Polars, Arrow, SQL, the nested JSON
object, the documentation) says the same fields, in the same places, with the same types."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from storage.inputs.canonical import CANONICAL_SCHEMA, STEP_DTYPE
from storage.inputs.chat_files import TRACE_ARROW_SCHEMA
from storage.inputs.readers import read_traces
from storage.schema import SCHEMA_SQL
from transforms.trace_schema import (
    CANONICAL,
    HASHED,
    STEP,
    STEP_FILE_FIELDS,
    nested_arrow_schema,
    nested_record,
    nested_step,
)

_ROOT = Path(__file__).resolve().parents[2]
_DOC_TYPES = {
    "string": "str",
    "integer": "int64",
    "number": "float64",
    "boolean": "bool",
    "timestamp": "datetime[us, UTC]",
    "steps": "list[struct]",
    "strings": "list[str]",
}
_DUCKDB_TYPES = {
    "string": "VARCHAR",
    "integer": "BIGINT",
    "number": "DOUBLE",
    "boolean": "BOOLEAN",
    "timestamp": "TIMESTAMP WITH TIME ZONE",
}


def _arrow_paths(t: pa.DataType | pa.Schema, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The leaf paths of a nested Arrow type, in order (a list's elements under its name)."""
    fields = list(t) if isinstance(t, pa.Schema) else [t.field(i) for i in range(t.num_fields)]
    paths: list[tuple[str, ...]] = []
    for f in fields:
        path = (*prefix, f.name)
        if pa.types.is_struct(f.type):
            paths += _arrow_paths(f.type, path)
        elif pa.types.is_list(f.type) and pa.types.is_struct(f.type.value_type):
            paths += _arrow_paths(f.type.value_type, path)
        else:
            paths.append(path)
    return paths


def test_the_polars_frame_has_the_schema_s_columns_and_kinds_in_order() -> None:
    assert list(CANONICAL_SCHEMA) == [f.name for f in CANONICAL]
    assert list(STEP_DTYPE.to_schema()) == [f.name for f in STEP]
    kinds = {pl.String: "string", pl.Int64: "integer", pl.Float64: "number", pl.Boolean: "boolean"}
    for f in CANONICAL:
        dtype = CANONICAL_SCHEMA[f.name]
        if f.kind == "steps":
            assert dtype == pl.List(STEP_DTYPE)
        elif f.kind == "timestamp":
            assert dtype == pl.Datetime("us", "UTC")
        elif f.kind == "strings":
            assert dtype == pl.List(pl.String), f.name
        else:
            assert kinds[type(dtype)] == f.kind, f.name


def test_the_nested_arrow_layout_holds_every_file_field_at_its_path() -> None:
    expected = [
        f.path if f.kind != "steps" else None for f in CANONICAL if f.path
    ]  # steps expand to their own fields
    paths = _arrow_paths(TRACE_ARROW_SCHEMA)
    step_paths = [("steps", *f.path) for f in STEP_FILE_FIELDS]
    assert sorted(paths) == sorted([p for p in expected if p is not None] + step_paths)
    assert TRACE_ARROW_SCHEMA.names == ["id", "metadata", "task", "steps", "outcome"]


def test_the_stored_table_has_the_schema_s_types_and_nullability() -> None:
    with duckdb.connect() as con:
        con.execute(SCHEMA_SQL)
        described = {
            name: (column_type, null)
            for name, column_type, null, *_ in con.execute("DESCRIBE trace_rows").fetchall()
        }
    stored = [f for f in CANONICAL if f.hashed or f.name in ("content_hash", "source_file")]
    for f in stored:
        column_type, null = described[f.name]
        assert null == ("YES" if f.nullable else "NO"), f.name
        if f.kind == "steps":
            fields = re.findall(r"\"?(\w+)\"? (\w+)[,)]", column_type)
            assert [name for name, _ in fields] == [s.name for s in STEP]
            assert [t for _, t in fields] == [_DUCKDB_TYPES[s.kind] for s in STEP]
        else:
            assert column_type == _DUCKDB_TYPES[f.kind], f.name
    not_stored = {f.name for f in CANONICAL} - set(described)
    assert not_stored == {"created_at_raw", "read_rule", "read_reason", "outcome_unknown"}


def _values() -> dict[str, Any]:
    """One trace with a distinct value in every field the file holds."""
    steps = [
        nested_step({"step_id": 7, "type": "thought", "content": "c0", "latency_ms": 1.5}),
        nested_step(
            {
                "step_id": 8,
                "type": "tool_call",
                "content": "c1",
                "tool_name": "grep",
                "input": '{"q":"x"}',
                "output_summary": "o1",
                "latency_ms": 2.5,
            }
        ),
    ]
    return {
        "trace_id": "t-1",
        "created_at": datetime(2025, 3, 4, 5, 6, 7, 890000, tzinfo=UTC),
        "agent_id": "agent-a",
        "task_domain": "domain-d",
        "success": False,
        "outcome_unknown": False,
        "agent_version": "2.1",
        "tags": ["canary", "eu"],
        "objective": "the objective",
        "result_summary": "the answer",
        "confidence": 0.25,
        "steps": steps,
    }


def test_a_trace_made_from_canonical_values_reads_back_to_them_from_json_and_parquet(
    tmp_path: Path,
) -> None:
    record = nested_record(_values())
    as_json = {
        **record,
        "metadata": {**record["metadata"], "created_at": "2025-03-04T05:06:07.89Z"},
    }
    (tmp_path / "a.json").write_text(json.dumps(as_json))
    pq.write_table(
        pa.Table.from_pylist([record], schema=nested_arrow_schema()), tmp_path / "b.parquet"
    )
    result = read_traces([tmp_path / "a.json", tmp_path / "b.parquet"])
    rows = result.rows.to_dicts()
    assert len(rows) == 2
    for row in rows:
        for name, value in _values().items():
            if name != "steps":
                assert row[name] == value, name
        assert [s["tool_present"] for s in row["steps"]] == [False, True]
        assert [s["tool_name"] for s in row["steps"]] == [None, "grep"]
        assert [s["step_id"] for s in row["steps"]] == [7, 8]
        assert [s["input"] for s in row["steps"]] == [None, '{"q":"x"}']
        assert [s["output_summary"] for s in row["steps"]] == [None, "o1"]
        assert [s["latency_ms"] for s in row["steps"]] == [1.5, 2.5]
        assert row["read_rule"] is None
    assert rows[0]["content_hash"] == rows[1]["content_hash"]


def test_a_group_with_no_value_is_absent_as_a_trace_file_writes_it() -> None:
    assert nested_step({"step_id": 0, "type": "thought"})["tool"] is None
    assert nested_step({"tool_name": "t"})["tool"] == {"name": "t"}
    assert nested_record({"trace_id": "x"})["outcome"] is None


def test_the_documented_canonical_row_is_the_schema() -> None:
    text = (_ROOT / "docs" / "input-format.md").read_text()
    section = text.split("## The canonical row", 1)[1].split("\n\n", 3)[2]
    table = [line.split("|")[1:3] for line in section.splitlines()[2:] if line.startswith("|")]
    assert [(name.strip(), kind.strip()) for name, kind in table] == [
        (f.name, _DOC_TYPES[f.kind]) for f in CANONICAL
    ]
    for f in CANONICAL:
        if f.path:
            assert f"`{'.'.join(f.path)}`" in text, f.name
    step_sentence = text.split("Step struct fields:", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"`(\w+)` (?:str|int64|bool|float64)", step_sentence) == [
        f.name for f in STEP
    ]
    assert (
        list(HASHED)
        == re.findall(r'"(\w+)":', text.split("```\n{", 1)[1].split("```", 1)[0])[: len(HASHED)]
    )


def test_the_sql_schema_loads_neither_polars_nor_pyarrow() -> None:
    code = (
        "import sys, storage.schema; "
        "print(sorted(m for m in ('polars', 'pyarrow') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=_ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
