"""Reading trace files into canonical rows: formats, coercion, file-level failures."""

from __future__ import annotations

import copy
import hashlib
import json
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import changed
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal, assert_series_equal

from storage.errors import InputError
from storage.inputs.canonical import parse_created_at, parse_timestamp
from storage.inputs.input_paths import expand_paths
from storage.inputs.readers import (
    CANONICAL_SCHEMA,
    FILE_QUARANTINE_SCHEMA,
    FileInfo,
    read_traces,
    rows_from_objects,
)


def _trace(trace_id: str = "kp:trace:1", **changes: Any) -> dict[str, Any]:
    trace: dict[str, Any] = {
        "@type": "ReasoningTrace",
        "id": trace_id,
        "metadata": {
            "created_at": "2024-05-01T12:00:00Z",
            "agent_id": "agent-a",
            "task_domain": "code",
            "success": True,
            "quality_score": 0.5,
        },
        "task": {"objective": "Fix the failing build"},
        "steps": [
            {"step_id": 1, "type": "thought", "content": "read the log"},
            {
                "step_id": 2,
                "type": "tool_call",
                "content": "run tests",
                "tool": {"name": "pytest", "version": "8"},
                "input": {"path": "tests", "flags": {"x": True, "k": "slow"}},
                "output_summary": "2 failed",
                "latency_ms": 120.5,
            },
            {"step_id": 3, "type": "observation", "content": "import error"},
        ],
        "outcome": {"result_summary": "fixed the import", "confidence": 0.9},
    }
    return changed(trace, changes)


def _write_jsonl(path: Path, traces: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    return path


def _write_parquet(path: Path, traces: list[dict[str, Any]]) -> Path:
    pq.write_table(pa.Table.from_pylist(traces), path)
    return path


def _only_file(result_files: list[FileInfo]) -> FileInfo:
    assert len(result_files) == 1
    return result_files[0]


def test_expand_paths_accepts_files_folders_and_globs_sorted_without_duplicates(
    tmp_path: Path,
) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "deep").mkdir()
    files = [
        tmp_path / "a.jsonl",
        tmp_path / "b" / "x.parquet",
        tmp_path / "b" / "deep" / "y.NDJSON",
        tmp_path / "c.json",
        tmp_path / "d.pq",
    ]
    for file in files:
        file.write_text("")
    (tmp_path / "b" / "notes.txt").write_text("ignored")

    got = expand_paths([tmp_path / "c.json", tmp_path / "b", str(tmp_path / "*.jsonl"), tmp_path])

    assert got == sorted((f.resolve() for f in files), key=str)
    assert expand_paths([str(tmp_path / "**" / "*.parquet")]) == [files[1].resolve()]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("missing.jsonl", "does not exist"),
        ("*.parquet", "matches no trace files"),
        ("empty_folder", "holds no trace files"),
        ("notes.csv", "has extension '.csv'"),
    ],
)
def test_expand_paths_raises_input_error_naming_the_path(
    tmp_path: Path, name: str, message: str
) -> None:
    (tmp_path / "empty_folder").mkdir()
    (tmp_path / "notes.csv").write_text("a,b")

    with pytest.raises(InputError, match=message) as caught:
        expand_paths([tmp_path / name])

    assert name in str(caught.value)


def test_a_folder_whose_only_files_are_hidden_says_which_to_name(tmp_path: Path) -> None:
    history = tmp_path / "my_agent" / ".adk" / "eval_history"
    history.mkdir(parents=True)
    (history / "run.evalset_result.json").write_text("{}")

    with pytest.raises(InputError, match="holds no trace files") as caught:
        expand_paths([tmp_path / "my_agent"])

    # the hidden file is named, so the user can give it (or its folder) by name
    assert "hidden" in str(caught.value)
    assert str(history / "run.evalset_result.json") in str(caught.value)
    assert expand_paths([history]) == [(history / "run.evalset_result.json").resolve()]


def test_expand_paths_raises_on_no_paths() -> None:
    with pytest.raises(InputError, match="no input paths"):
        expand_paths([])


@pytest.mark.parametrize("writer", [_write_jsonl, _write_parquet])
def test_rows_have_exactly_the_canonical_schema(tmp_path: Path, writer: Any) -> None:
    suffix = ".jsonl" if writer is _write_jsonl else ".parquet"
    path = writer(tmp_path / f"t{suffix}", [_trace("kp:trace:1"), _trace("kp:trace:2")])

    result = read_traces([path])

    assert result.rows.schema == pl.Schema(CANONICAL_SCHEMA)
    assert result.rows["row_number"].to_list() == [1, 2]
    assert result.rows["source_file"].to_list() == [str(path.resolve())] * 2
    assert result.rows["read_rule"].null_count() == 2
    steps = result.rows["steps"][0].to_list()
    assert steps[1] == {
        "step_id": 2,
        "type": "tool_call",
        "content": "run tests",
        "tool_present": True,
        "tool_name": "pytest",
        "input": '{"flags":{"k":"slow","x":true},"path":"tests"}',
        "output_summary": "2 failed",
        "latency_ms": 120.5,
    }
    assert steps[0]["tool_present"] is False


def test_same_trace_from_jsonl_json_and_parquet_gives_identical_rows(tmp_path: Path) -> None:
    traces = [
        _trace("kp:trace:1"),
        _trace("kp:trace:2", metadata__created_at="2024-05-01T21:00:00.123456+09:00", steps=[]),
        _trace("kp:trace:3", metadata__task_domain=None, outcome__confidence=1),
    ]
    sources = [
        _write_jsonl(tmp_path / "a.jsonl", traces),
        tmp_path / "b.json",
        _write_parquet(tmp_path / "c.parquet", traces),
    ]
    sources[1].write_text(json.dumps(traces), encoding="utf-8")
    pl.DataFrame(traces).write_parquet(tmp_path / "d.parquet")

    rows = read_traces([tmp_path]).rows.drop("source_file")

    assert rows.height == 12
    for start in (3, 6, 9):
        assert_frame_equal(rows.slice(start, 3), rows.slice(0, 3))


def test_content_hash_ignores_file_and_position_but_not_content(tmp_path: Path) -> None:
    _write_jsonl(tmp_path / "a.jsonl", [_trace("kp:trace:1"), _trace("kp:trace:1")])
    _write_jsonl(tmp_path / "b.jsonl", [_trace("kp:trace:1", outcome__confidence=0.8)])

    hashes = read_traces([tmp_path]).rows["content_hash"].to_list()

    assert hashes[0] == hashes[1] != hashes[2]
    assert len(hashes[0]) == 64


def test_file_info_records_size_and_sha256_of_the_bytes(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "a.jsonl", [_trace()])

    info = _only_file(read_traces([path]).files)

    data = path.read_bytes()
    assert info == FileInfo(
        str(path.resolve()), len(data), hashlib.sha256(data).hexdigest(), 1, None, None
    )


@pytest.mark.parametrize("name", ["empty.jsonl", "empty.parquet", "empty.json"])
def test_zero_byte_file_is_empty_file_and_others_still_load(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(b"")
    _write_jsonl(tmp_path / "good.jsonl", [_trace()])

    result = read_traces([tmp_path])

    empty = next(info for info in result.files if info.path.endswith(name))
    assert (empty.rule, empty.rows_read, empty.size) == ("empty_file", 0, 0)
    assert "zero bytes" in (empty.reason or "")
    assert result.rows.height == 1


def test_truncated_parquet_is_unreadable_and_others_still_load(tmp_path: Path) -> None:
    good = _write_parquet(tmp_path / "a.parquet", [_trace("kp:trace:1")])
    data = _write_parquet(tmp_path / "b.parquet", [_trace("kp:trace:2")]).read_bytes()
    (tmp_path / "b.parquet").write_bytes(data[: len(data) // 2])
    (tmp_path / "c.parquet").write_text('{"id": "not parquet"}')

    result = read_traces([tmp_path])

    assert [(info.rule, info.rows_read) for info in result.files] == [
        (None, 1),
        ("unreadable_file", 0),
        ("unreadable_file", 0),
    ]
    assert "not a readable Parquet file" in (result.files[1].reason or "")
    assert result.rows["trace_id"].to_list() == ["kp:trace:1"]
    assert result.rows["source_file"].to_list() == [str(good.resolve())]
    expected = pl.DataFrame(
        {
            "source_file": [str((tmp_path / n).resolve()) for n in ("b.parquet", "c.parquet")],
            "row_number": [None, None],
            "trace_id": [None, None],
            "rule": ["unreadable_file"] * 2,
            "reason": [result.files[1].reason, result.files[2].reason],
        },
        schema=FILE_QUARANTINE_SCHEMA,
    )
    assert_frame_equal(result.rejected_files(), expected)


@pytest.mark.parametrize(
    ("column", "values", "found", "expected"),
    [
        ("outcome", [{"result_summary": "x", "confidence": "0.9"}], "string", "a number"),
        ("metadata", [{"created_at": "2024-05-01", "success": 1}], "int64", "a boolean"),
        ("steps", ["thought"], "string", "a list of structs"),
        ("metadata", ["2024-05-01"], "string", "a struct"),
        ("metadata", [{"created_at": 20240501, "success": True}], "int64", "an ISO-8601 string"),
        (
            "metadata",
            [{"created_at": "2024-05-01", "tags": "canary"}],
            "string",
            "a list of strings",
        ),
        (
            "metadata",
            [{"created_at": "2024-05-01", "tags": [1, 2]}],
            "list<element: int64>",
            "a list",
        ),
    ],
)
def test_parquet_column_of_wrong_type_is_schema_mismatch(
    tmp_path: Path, column: str, values: list[Any], found: str, expected: str
) -> None:
    table = pa.table({"id": ["kp:trace:1"], column: values})
    pq.write_table(table, tmp_path / "bad.parquet")

    info = _only_file(read_traces([tmp_path]).files)

    assert (info.rule, info.rows_read) == ("schema_mismatch", 0)
    assert f"has type {found}" in (info.reason or "")
    assert f"expected {expected}" in (info.reason or "")


def test_parquet_missing_and_extra_columns_give_nulls_and_are_ignored(tmp_path: Path) -> None:
    table = pa.table(
        {
            "id": ["kp:trace:1"],
            "metadata": [{"agent_id": "a"}],
            "extra": [{"anything": [1, 2]}],
        }
    )
    pq.write_table(table, tmp_path / "sparse.parquet")

    rows = read_traces([tmp_path]).rows

    assert rows.select("trace_id", "agent_id").row(0) == ("kp:trace:1", "a")
    nulls = rows.select(
        "created_at", "created_at_raw", "success", "objective", "result_summary", "confidence"
    )
    assert nulls.null_count().row(0) == (1,) * 6
    assert rows["steps"].to_list() == [[]]


def test_jsonl_line_that_is_not_json_becomes_an_invalid_json_row(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        json.dumps(_trace("kp:trace:1")) + "\n\n   \n{broken\n[1, 2]\n" + json.dumps(_trace()),
        encoding="utf-8",
    )

    result = read_traces([path])

    got = result.rows.select("row_number", "trace_id", "read_rule")
    expected = pl.DataFrame(
        {
            "row_number": [1, 4, 5, 6],
            "trace_id": ["kp:trace:1", None, None, "kp:trace:1"],
            "read_rule": [None, "invalid_json", "invalid_json", None],
        },
        schema={"row_number": pl.Int64, "trace_id": pl.String, "read_rule": pl.String},
    )
    assert_frame_equal(got, expected)
    assert result.rows["read_reason"][1].startswith("line 4 is not valid JSON")
    assert result.rows["read_reason"][2] == "line 5 is a JSON list, expected a trace object"
    assert _only_file(result.files).rows_read == 4


def test_json_file_holds_an_array_or_one_object(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps([_trace("kp:trace:1"), 3]), encoding="utf-8")
    (tmp_path / "b.json").write_text(json.dumps(_trace("kp:trace:2")), encoding="utf-8")

    rows = read_traces([tmp_path]).rows

    assert rows.select("row_number", "trace_id", "read_rule").rows() == [
        (1, "kp:trace:1", None),
        (2, None, "invalid_json"),
        (1, "kp:trace:2", None),
    ]


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("a.json", b'{"id": "kp:trace:1",', "not valid JSON"),
        ("b.json", b"42", "is a int, expected an array"),
        ("c.jsonl", b'{"id": "caf\xe9"}\n', "not UTF-8"),
    ],
)
def test_unparsable_json_file_is_unreadable(
    tmp_path: Path, name: str, data: bytes, reason: str
) -> None:
    (tmp_path / name).write_bytes(data)

    info = _only_file(read_traces([tmp_path]).files)

    assert (info.rule, info.rows_read) == ("unreadable_file", 0)
    assert reason in (info.reason or "")


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"outcome__confidence": "0.9"}, "outcome.confidence must be a number, got str '0.9'"),
        ({"outcome__confidence": True}, "outcome.confidence must be a number, got bool True"),
        ({"metadata__success": "yes"}, "metadata.success must be true or false, got str 'yes'"),
        ({"steps": "none"}, "steps must be a list, got str 'none'"),
        ({"metadata": []}, "metadata must be an object, got list []"),
        ({"metadata__created_at": 1714564800}, "metadata.created_at must be an ISO-8601 string"),
        ({"id": 7}, "id must be a string, got int 7"),
        ({"metadata__tags": "canary"}, "metadata.tags must be a list of strings, got str"),
        ({"metadata__tags": ["canary", 2]}, "metadata.tags must be a list of strings, got list"),
    ],
)
def test_json_field_of_wrong_type_is_wrong_type_naming_the_field(
    tmp_path: Path, change: dict[str, Any], reason: str
) -> None:
    _write_jsonl(tmp_path / "t.jsonl", [_trace(**change)])

    row = read_traces([tmp_path]).rows.row(0, named=True)

    assert row["read_rule"] == "wrong_type"
    assert reason in row["read_reason"]


def test_json_step_of_wrong_type_names_the_step(tmp_path: Path) -> None:
    trace = _trace()
    trace["steps"][1]["input"] = [1, 2]
    trace["steps"][2]["tool"] = "grep"
    _write_jsonl(tmp_path / "t.jsonl", [trace])

    row = read_traces([tmp_path]).rows.row(0, named=True)

    assert row["read_reason"] == (
        "step 2 input must be an object or a JSON string, got list [1, 2]; "
        "step 3 tool must be an object, got str 'grep'"
    )


def test_json_nan_and_integer_confidence_are_numbers(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        json.dumps(_trace(outcome__confidence=1))
        + "\n"
        + json.dumps(_trace(outcome__confidence=float("nan"))),
        encoding="utf-8",
    )

    rows = read_traces([path]).rows

    assert rows["read_rule"].null_count() == 2
    assert rows["confidence"][0] == 1.0
    assert rows["confidence"].is_nan().to_list() == [False, True]


def test_iso_timestamps_with_z_offset_and_naive_give_the_same_instant(tmp_path: Path) -> None:
    stamps = [
        "2024-05-01T12:00:00Z",
        "2024-05-01T21:00:00+09:00",
        "2024-05-01T12:00:00",
        "2024-05-01 12:00:00.000000+00:00",
    ]
    _write_jsonl(tmp_path / "t.jsonl", [_trace(metadata__created_at=s) for s in stamps])

    rows = read_traces([tmp_path]).rows

    expected = pl.Series(
        "created_at", [datetime(2024, 5, 1, 12, tzinfo=UTC)] * 4, dtype=pl.Datetime("us", "UTC")
    )
    assert_series_equal(rows["created_at"], expected)
    assert rows["created_at_raw"].to_list() == stamps


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_parquet_timestamps_naive_and_aware_give_the_same_instant(
    tmp_path: Path, unit: str
) -> None:
    tokyo = timezone(timedelta(hours=9))
    metadata = pa.array(
        [
            {"created_at": datetime(2024, 5, 1, 12), "success": True},
        ],
        type=pa.struct([("created_at", pa.timestamp(unit)), ("success", pa.bool_())]),
    )
    aware = pa.array(
        [{"created_at": datetime(2024, 5, 1, 21, tzinfo=tokyo), "success": True}],
        type=pa.struct(
            [("created_at", pa.timestamp(unit, tz="Asia/Tokyo")), ("success", pa.bool_())]
        ),
    )
    pq.write_table(pa.table({"id": ["a"], "metadata": metadata}), tmp_path / "naive.parquet")
    pq.write_table(pa.table({"id": ["b"], "metadata": aware}), tmp_path / "aware.parquet")
    _write_jsonl(tmp_path / "z.jsonl", [_trace(metadata__created_at="2024-05-01T12:00:00Z")])

    rows = read_traces([tmp_path]).rows

    assert rows["created_at"].to_list() == [datetime(2024, 5, 1, 12, tzinfo=UTC)] * 3
    assert rows["created_at"].dtype == pl.Datetime("us", "UTC")


def test_unparsable_created_at_is_null_with_the_raw_text_kept(tmp_path: Path) -> None:
    _write_jsonl(tmp_path / "t.jsonl", [_trace(metadata__created_at="yesterday")])
    _write_parquet(tmp_path / "t.parquet", [_trace(metadata__created_at="2024-13-45")])

    rows = read_traces([tmp_path]).rows

    assert rows.select("created_at_raw", "created_at").rows() == [
        ("yesterday", None),
        ("2024-13-45", None),
    ]


def test_step_input_as_json_string_or_struct(tmp_path: Path) -> None:
    with_string = _trace("kp:trace:s")
    with_string["steps"][1]["input"] = '{"path": "tests"}'
    _write_parquet(tmp_path / "string.parquet", [with_string])
    _write_parquet(tmp_path / "struct.parquet", [_trace("kp:trace:o")])
    _write_jsonl(tmp_path / "z.jsonl", [with_string, _trace("kp:trace:o")])

    rows = read_traces([tmp_path]).rows

    inputs = rows["steps"].list.get(1).struct.field("input").to_list()
    assert inputs == [
        '{"path": "tests"}',
        '{"flags":{"k":"slow","x":true},"path":"tests"}',
        '{"path": "tests"}',
        '{"flags":{"k":"slow","x":true},"path":"tests"}',
    ]
    assert rows["content_hash"][1] == rows["content_hash"][3]


def test_parquet_struct_input_keeps_null_fields_like_json_dumps(tmp_path: Path) -> None:
    first, second = _trace("kp:trace:1"), _trace("kp:trace:2")
    second["steps"][1]["input"] = {"path": "src"}
    _write_parquet(tmp_path / "t.parquet", [first, second])

    rows = read_traces([tmp_path]).rows

    inputs = rows["steps"].list.get(1).struct.field("input").to_list()
    assert inputs[1] == '{"flags":null,"path":"src"}'
    assert rows["steps"].list.get(0).struct.field("input").to_list() == [None, None]


@pytest.mark.parametrize("writer", [_write_jsonl, _write_parquet])
def test_zero_and_missing_steps_read_as_an_empty_list(tmp_path: Path, writer: Any) -> None:
    no_steps = _trace("kp:trace:2")
    del no_steps["steps"]
    traces = [_trace("kp:trace:1", steps=[]), no_steps, _trace("kp:trace:3", steps=None)]
    writer(tmp_path / ("t.jsonl" if writer is _write_jsonl else "t.parquet"), traces)

    rows = read_traces([tmp_path]).rows

    assert rows["steps"].to_list() == [[], [], []]
    assert rows["read_rule"].null_count() == 3


def test_parquet_without_a_steps_column_reads_empty_steps(tmp_path: Path) -> None:
    trace = _trace()
    del trace["steps"]
    _write_parquet(tmp_path / "t.parquet", [trace])

    assert read_traces([tmp_path]).rows["steps"].to_list() == [[]]


@pytest.mark.parametrize("writer", [_write_jsonl, _write_parquet])
def test_huge_trace_reads_fine(tmp_path: Path, writer: Any) -> None:
    step = {"step_id": 0, "type": "observation", "content": "saw it", "tool": {"name": "ls"}}
    steps = [dict(step, step_id=i) for i in range(10_000)]
    trace = _trace(steps=steps, task__objective="x" * 1_000_000)
    writer(tmp_path / ("t.jsonl" if writer is _write_jsonl else "t.parquet"), [trace])

    rows = read_traces([tmp_path]).rows

    assert rows["steps"].list.len().to_list() == [10_000]
    assert rows["objective"].str.len_bytes().to_list() == [1_000_000]
    assert rows["steps"].list.get(9_999).struct.field("step_id").to_list() == [9_999]


def test_polars_written_parquet_reads_like_jsonl(tmp_path: Path) -> None:
    traces = [copy.deepcopy(_trace(f"kp:trace:{i}")) for i in range(3)]
    pl.DataFrame(traces).write_parquet(tmp_path / "a.parquet")
    _write_jsonl(tmp_path / "b.jsonl", traces)

    rows = read_traces([tmp_path]).rows.drop("source_file", "created_at_raw")

    assert_frame_equal(rows.head(3), rows.tail(3))


def test_empty_input_gives_an_empty_canonical_frame(tmp_path: Path) -> None:
    (tmp_path / "blank.jsonl").write_text("\n\n")

    result = read_traces([tmp_path])

    assert_frame_equal(result.rows, pl.DataFrame(schema=CANONICAL_SCHEMA))
    assert _only_file(result.files).rows_read == 0


def test_parquet_steps_written_as_list_of_null_read_as_empty_steps(tmp_path: Path) -> None:
    traces = [_trace("kp:trace:1", steps=[]), _trace("kp:trace:2", steps=[])]
    pl.DataFrame(traces).write_parquet(tmp_path / "t.parquet")

    rows = read_traces([tmp_path]).rows

    assert rows["steps"].to_list() == [[], []]
    assert rows["read_rule"].null_count() == 2


def test_parquet_with_invalid_utf8_text_is_unreadable(tmp_path: Path) -> None:
    ids = pa.array([b"kp:\xff"], pa.binary()).view(pa.string())
    pq.write_table(pa.table({"id": ids}), tmp_path / "bad.parquet")

    info = _only_file(read_traces([tmp_path]).files)

    assert (info.rule, info.rows_read) == ("unreadable_file", 0)
    assert "UTF8" in (info.reason or "")


def test_jsonl_line_with_a_lone_surrogate_is_invalid_json(tmp_path: Path) -> None:
    good = json.dumps(_trace("kp:trace:\ud83d\ude00"))
    (tmp_path / "t.jsonl").write_text(
        good + "\n" + json.dumps(_trace("kp:trace:\ud800")) + "\n", encoding="utf-8"
    )

    rows = read_traces([tmp_path]).rows

    assert rows.select("trace_id", "read_rule").rows() == [
        ("kp:trace:\U0001f600", None),
        (None, "invalid_json"),
    ]
    assert "lone UTF-16 surrogate" in rows["read_reason"][1]


def test_rows_from_objects_reads_like_a_json_file(tmp_path: Path) -> None:
    trace = _trace(metadata__created_at="2024-05-01T12:00:00Z")
    (tmp_path / "t.json").write_text(json.dumps([trace]), encoding="utf-8")
    in_memory = _trace(metadata__created_at=datetime(2024, 5, 1, 12, tzinfo=UTC))

    got = rows_from_objects([in_memory], source="<api>")

    expected = read_traces([tmp_path]).rows
    assert got["source_file"].to_list() == ["<api>"]
    assert_frame_equal(
        got.drop("source_file", "created_at_raw"), expected.drop("source_file", "created_at_raw")
    )


_ISO_INSTANTS = st.datetimes(min_value=datetime(1000, 1, 2), max_value=datetime(9998, 12, 30))
_OFFSETS = st.one_of(
    st.none(),
    st.just("Z"),
    st.integers(-14 * 60, 14 * 60).map(
        lambda m: f"{'+' if m >= 0 else '-'}{abs(m) // 60:02d}:{abs(m) % 60:02d}"
    ),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(_ISO_INSTANTS, _OFFSETS, st.sampled_from(["T", " "]), st.booleans()).map(
                lambda t: (
                    t[0].isoformat(sep=t[2], timespec="microseconds" if t[3] else "seconds")
                    + (t[1] or "")
                )
            ),
            st.text(max_size=30),
        ),
        max_size=20,
    )
)
def test_vectorized_timestamp_parsing_means_what_fromisoformat_means(values: list[str]) -> None:
    got = parse_created_at(pl.Series(values, dtype=pl.String)).to_list()

    assert got == [parse_timestamp(value) for value in values]


@pytest.mark.parametrize(
    "list_type", [pa.list_, pa.large_list, lambda t: pa.list_(t, 1), pa.list_view]
)
def test_parquet_accepts_every_documented_type_that_can_hold_a_field(
    tmp_path: Path, list_type: Any
) -> None:
    nested = pa.list_(pa.struct([("y", pa.string()), ("b", pa.float32())]))
    step_type = pa.struct(
        [
            ("step_id", pa.int32()),
            ("type", pa.string_view()),
            ("tool", pa.struct([("name", pa.large_string())])),
            ("input", pa.struct([("z", pa.int8()), ("a", nested)])),
            ("latency_ms", pa.decimal128(10, 2)),
        ]
    )
    step = {
        "step_id": 1,
        "type": "tool_call",
        "tool": {"name": "search"},
        "input": {"z": 1, "a": [{"y": "q", "b": 1.5}]},
        "latency_ms": Decimal("3.25"),
    }
    metadata_type = pa.struct([("created_at", pa.timestamp("ns")), ("success", pa.bool_())])
    table = pa.table(
        {
            "id": pa.array(["kp:trace:1"], pa.string_view()),
            "metadata": pa.array(
                [{"created_at": datetime(2024, 5, 1, 12), "success": True}], metadata_type
            ),
            "outcome": pa.array(
                [{"confidence": Decimal("0.50")}],
                pa.struct([("confidence", pa.decimal128(5, 2))]),
            ),
            "steps": pa.array([[step]], list_type(step_type)),
        }
    )
    pq.write_table(table, tmp_path / "t.parquet")

    rows = read_traces([tmp_path]).rows

    assert rows.select("trace_id", "confidence", "created_at_raw").row(0) == (
        "kp:trace:1",
        0.5,
        "2024-05-01T12:00:00.000000+00:00",
    )
    assert rows["steps"].to_list() == [
        [
            {
                "step_id": 1,
                "type": "tool_call",
                "content": None,
                "tool_present": True,
                "tool_name": "search",
                "input": '{"a":[{"b":1.5,"y":"q"}],"z":1}',
                "output_summary": None,
                "latency_ms": 3.25,
            }
        ]
    ]


def test_parquet_read_in_batches_equals_one_read(tmp_path: Path) -> None:
    from storage.inputs.readers import read_file_batches
    from transforms.synth.traces import synthetic_traces

    path = tmp_path / "many.parquet"
    synthetic_traces(250, seed=4).write_parquet(path, row_group_size=100)
    batches: list[pl.DataFrame] = []
    info = read_file_batches(path, batches.append, batch_rows=64)
    assert info.rule is None and info.rows_read == 250
    assert len(batches) > 3
    whole = read_traces([path]).rows
    assert_frame_equal(pl.concat(batches), whole)
    assert whole["row_number"].to_list() == list(range(1, 251))
