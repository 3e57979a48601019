"""Chat trajectory files: reading JSON and JSONL records, writing trace Parquet and the report."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from storage.errors import InputError
from storage.inputs.chat_files import (
    iter_chat_records,
    read_chat_records,
    report_path_for,
    trace_parquet_writer,
    write_import_report,
    write_trace_parquet,
)
from storage.inputs.readers import read_traces
from transforms.chat import ChatRecord, ChatRejection

TRACE = {
    "id": "kp:trace:00000000-0000-5000-8000-000000000001",
    "metadata": {
        "created_at": datetime(2024, 5, 15, 20, 0, 1, tzinfo=UTC),
        "agent_id": "gpt-4o-airline",
        "task_domain": "customer_service",
        "success": True,
    },
    "task": {"objective": "Cancel ABC123"},
    "steps": [
        {
            "step_id": 0,
            "type": "thought",
            "content": "Checking",
            "tool": None,
            "input": None,
            "output_summary": None,
            "latency_ms": None,
        },
        {
            "step_id": 1,
            "type": "tool_call",
            "content": None,
            "tool": {"name": "cancel"},
            "input": '{"id":"ABC123"}',
            "output_summary": None,
            "latency_ms": None,
        },
    ],
    "outcome": {"result_summary": "Cancelled", "confidence": 1.0},
}


def test_a_json_array_gives_one_record_per_element(tmp_path: Path) -> None:
    path = tmp_path / "runs.json"
    path.write_text("\ufeff" + json.dumps([{"a": 1}, [2], "x"]), encoding="utf-8")
    assert read_chat_records(path) == [
        ChatRecord(1, 0, {"a": 1}),
        ChatRecord(2, 1, [2]),
        ChatRecord(3, 2, "x"),
    ]


def test_a_json_object_is_one_record(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_text('{"traj": []}')
    assert read_chat_records(path) == [ChatRecord(1, 0, {"traj": []})]


def test_jsonl_keeps_line_numbers_skips_blank_lines_and_reports_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "runs.JSONL"
    path.write_text('{"a": 1}\n\n{"a": \n  \n{"a": 3}\n')
    records = read_chat_records(path)
    assert [(r.number, r.position, r.value) for r in records] == [
        (1, 0, {"a": 1}),
        (3, 1, None),
        (5, 2, {"a": 3}),
    ]
    assert records[1].malformed is not None and records[1].malformed.startswith(
        "line 3 is not valid JSON"
    )


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("runs.csv", b"a,b\n", "extension '.csv'"),
        ("runs.json", b"[{", "is not valid JSON"),
        ("runs.json", b"42", "holds a JSON int"),
        ("runs.jsonl", b"\xff\xfe{}", "not UTF-8"),
    ],
)
def test_files_that_cannot_be_read_at_all_raise_input_error(
    tmp_path: Path, name: str, content: bytes, says: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError, match=says):
        read_chat_records(path)


def test_a_missing_file_raises_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        read_chat_records(tmp_path / "none.json")


def test_the_parquet_reads_back_through_the_trace_reader(tmp_path: Path) -> None:
    out = write_trace_parquet([TRACE], tmp_path / "out" / "traces.parquet")
    rows = read_traces([out]).rows
    assert rows.height == 1 and rows["read_rule"].to_list() == [None]
    row = rows.row(0, named=True)
    assert (row["trace_id"], row["agent_id"], row["task_domain"], row["success"]) == (
        TRACE["id"],
        "gpt-4o-airline",
        "customer_service",
        True,
    )
    assert row["created_at"] == datetime(2024, 5, 15, 20, 0, 1, tzinfo=UTC)
    assert (row["objective"], row["result_summary"], row["confidence"]) == (
        "Cancel ABC123",
        "Cancelled",
        1.0,
    )
    assert [(s["type"], s["tool_present"], s["tool_name"], s["input"]) for s in row["steps"]] == [
        ("thought", False, None, None),
        ("tool_call", True, "cancel", '{"id":"ABC123"}'),
    ]
    assert [p.name for p in out.parent.iterdir()] == ["traces.parquet"]


def test_an_empty_import_writes_a_readable_empty_file(tmp_path: Path) -> None:
    out = write_trace_parquet([], tmp_path / "traces.parquet")
    assert read_traces([out]).rows.height == 0


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    out = write_trace_parquet([TRACE], tmp_path / "traces.parquet")
    before = out.read_bytes()
    broken = TRACE | {"metadata": TRACE["metadata"] | {"success": "yes"}}  # type: ignore[operator]
    with pytest.raises(Exception):  # noqa: B017 - pyarrow raises its own type
        write_trace_parquet([broken], out)
    assert out.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["traces.parquet"]


def test_the_report_has_one_row_per_rejection(tmp_path: Path) -> None:
    assert report_path_for(tmp_path / "traces.parquet") == tmp_path / "traces.import-report.csv"
    rejections = [
        ChatRejection(3, None, "[7,0]", "unknown_role", "message 4 has role 'function'"),
        ChatRejection(5, "kp:trace:x", "[8,1]", "duplicate_id", "record 9, same id"),
    ]
    path = write_import_report(rejections, "/data/runs.json", tmp_path / "report.csv")
    frame = pl.read_csv(path)
    assert frame.to_dicts() == [
        {
            "source_file": "/data/runs.json",
            "record_number": 3,
            "key": "[7,0]",
            "trace_id": None,
            "rule": "unknown_role",
            "reason": "message 4 has role 'function'",
        },
        {
            "source_file": "/data/runs.json",
            "record_number": 5,
            "key": "[8,1]",
            "trace_id": "kp:trace:x",
            "rule": "duplicate_id",
            "reason": "record 9, same id",
        },
    ]
    empty = write_import_report([], "/data/runs.json", tmp_path / "empty.csv")
    assert pl.read_csv(empty).columns == [
        "source_file",
        "record_number",
        "key",
        "trace_id",
        "rule",
        "reason",
    ]


def test_lone_surrogates_are_malformed_records_and_pairs_are_text(tmp_path: Path) -> None:
    lines = tmp_path / "runs.jsonl"
    lines.write_text('{"a": "\\ud800"}\n{"a": "\\ud83d\\ude00"}\n')
    first, second = read_chat_records(lines)
    assert (
        first.value is None
        and first.malformed is not None
        and "line 1 holds a lone UTF-16 surrogate" in first.malformed
    )
    assert second == ChatRecord(2, 1, {"a": "😀"})
    array = tmp_path / "runs.json"
    array.write_text('[{"a": 1}, {"a": "x\\udc00"}]')
    records = read_chat_records(array)
    assert records[0] == ChatRecord(1, 0, {"a": 1})
    assert records[1].malformed is not None and records[1].malformed.startswith("element 2 holds")


def _numbered(n: int) -> dict[str, Any]:
    return TRACE | {"id": f"kp:trace:{n}"}


def test_the_writer_appends_in_batches_and_leaves_out_dropped_rows(tmp_path: Path) -> None:
    out = tmp_path / "traces.parquet"
    with trace_parquet_writer(out, batch_rows=2) as writer:
        for n in range(5):
            writer.add(_numbered(n))
        writer.drop(1)
        writer.drop(3)
        assert writer.rows == 5
    assert pl.read_parquet(out)["id"].to_list() == ["kp:trace:0", "kp:trace:2", "kp:trace:4"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces.parquet"]


def test_an_error_inside_the_writer_leaves_no_file(tmp_path: Path) -> None:
    out = tmp_path / "traces.parquet"
    with pytest.raises(InputError), trace_parquet_writer(out, batch_rows=1) as writer:
        writer.add(_numbered(0))
        writer.add(_numbered(1))
        raise InputError("the input broke half way")
    assert list(tmp_path.iterdir()) == []


def test_jsonl_that_stops_being_utf8_half_way_raises_input_error(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2}\n\xff\xfe\n')
    records = iter_chat_records(path)
    with pytest.raises(InputError, match="not UTF-8 text"):
        list(records)


def test_a_bad_line_reason_gives_the_column_within_that_line(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text('{"task_id": 6, "trial": 0,\r\n{"a": 1}\n')
    (bad, good) = read_chat_records(path)
    assert (
        bad.malformed
        == "line 1 is not valid JSON (Expecting property name enclosed in double quotes at column 27)"
    )
    assert good == ChatRecord(2, 1, {"a": 1})
