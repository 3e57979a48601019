"""The input rules: one test per rule, rule order, duplicates and the per-file balance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import changed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from storage.inputs.readers import read_traces
from transforms.validate import (
    QUARANTINE_COLUMNS,
    RULES,
    STEP_TYPES,
    partition,
    split_duplicates,
    with_rule,
)


def _trace(trace_id: str | None = "kp:trace:1", **changes: Any) -> dict[str, Any]:
    trace: dict[str, Any] = {
        "id": trace_id,
        "metadata": {"created_at": "2024-05-01T12:00:00Z", "agent_id": "a", "success": True},
        "task": {"objective": "Summarise the report"},
        "steps": [
            {"step_id": 1, "type": "thought", "content": "plan"},
            {"step_id": 2, "type": "tool_call", "tool": {"name": "search"}, "input": {"q": "x"}},
            {"step_id": 3, "type": "observation", "content": "found it"},
        ],
        "outcome": {"result_summary": "done", "confidence": 0.8},
    }
    return changed(trace, changes)


def _rows(tmp_path: Path, *traces: dict[str, Any], name: str = "t.jsonl") -> pl.DataFrame:
    path = tmp_path / name
    path.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    return read_traces([path]).rows


def _ruled(rows: pl.DataFrame) -> pl.DataFrame:
    return split_duplicates(with_rule(rows.lazy())).collect()


def _only_rule(tmp_path: Path, trace: dict[str, Any]) -> tuple[str | None, str | None]:
    ruled = _ruled(_rows(tmp_path, trace))
    rule, reason = ruled.select("rule", "reason").row(0)
    return rule, reason


def test_valid_trace_has_no_rule(tmp_path: Path) -> None:
    assert _only_rule(tmp_path, _trace()) == (None, None)


@pytest.mark.parametrize(
    ("trace_id", "reason"),
    [(None, "id is missing"), ("", "id is empty"), ("  ", "id is empty")],
)
def test_missing_id(tmp_path: Path, trace_id: str | None, reason: str) -> None:
    rule, got = _only_rule(tmp_path, _trace(trace_id))
    assert rule == "missing_id"
    assert got is not None and got.startswith(reason)


def test_absent_id_key_is_missing_id(tmp_path: Path) -> None:
    trace = _trace()
    del trace["id"]
    assert _only_rule(tmp_path, trace)[0] == "missing_id"


def test_unparsable_created_at(tmp_path: Path) -> None:
    rule, reason = _only_rule(tmp_path, _trace(metadata__created_at="01/05/2024 noon"))
    assert rule == "invalid_created_at"
    assert reason is not None
    assert reason.startswith("metadata.created_at '01/05/2024 noon' is not an ISO-8601 timestamp")


def test_missing_created_at(tmp_path: Path) -> None:
    rule, reason = _only_rule(tmp_path, _trace(metadata__created_at=None))
    assert rule == "invalid_created_at"
    assert reason is not None and reason.startswith("metadata.created_at is missing")


def test_success_null(tmp_path: Path) -> None:
    assert _only_rule(tmp_path, _trace(metadata__success=None)) == (
        "missing_success",
        "metadata.success is missing; expected true or false (or null with "
        "metadata.outcome_unknown true, where the producer recorded no outcome)",
    )


def test_success_null_where_the_producer_recorded_no_outcome_is_valid(tmp_path: Path) -> None:
    trace = _trace(metadata__success=None)
    trace["metadata"]["outcome_unknown"] = True
    valid, quarantine = partition(_rows(tmp_path, trace))
    assert quarantine.is_empty() and valid["success"].to_list() == [None]
    trace["metadata"]["success"] = True  # the mark does not hide a recorded outcome
    valid, _ = partition(_rows(tmp_path, trace))
    assert valid["success"].to_list() == [True]


@pytest.mark.parametrize(
    ("confidence", "reason"),
    [
        (None, "outcome.confidence is missing; expected a number in [0, 1]"),
        (float("nan"), "outcome.confidence is NaN, expected a number in [0, 1]"),
        (1.5, "outcome.confidence is 1.5, expected a number in [0, 1]"),
        (-0.1, "outcome.confidence is -0.1, expected a number in [0, 1]"),
    ],
)
def test_invalid_confidence(tmp_path: Path, confidence: float | None, reason: str) -> None:
    assert _only_rule(tmp_path, _trace(outcome__confidence=confidence)) == (
        "invalid_confidence",
        reason,
    )


@pytest.mark.parametrize("confidence", [0, 0.0, 1, 1.0])
def test_confidence_bounds_are_valid(tmp_path: Path, confidence: float) -> None:
    assert _only_rule(tmp_path, _trace(outcome__confidence=confidence)) == (None, None)


def test_objective_null(tmp_path: Path) -> None:
    rule, _ = _only_rule(tmp_path, _trace(task__objective=None))
    assert rule == "missing_objective"
    assert _only_rule(tmp_path, _trace(task__objective="")) == (None, None)


def test_unknown_step_type_names_the_step_and_the_type(tmp_path: Path) -> None:
    trace = _trace()
    trace["steps"][2]["type"] = "plan"
    assert _only_rule(tmp_path, trace) == (
        "unknown_step_type",
        "step 3 has type 'plan', expected one of " + ", ".join(STEP_TYPES),
    )


def test_step_without_type_is_unknown_step_type(tmp_path: Path) -> None:
    trace = _trace()
    del trace["steps"][1]["type"]
    rule, reason = _only_rule(tmp_path, trace)
    assert rule == "unknown_step_type"
    assert reason is not None and reason.startswith("step 2 has no type")


def test_tool_without_name(tmp_path: Path) -> None:
    trace = _trace()
    trace["steps"][1]["tool"] = {"version": "2"}
    assert _only_rule(tmp_path, trace) == (
        "tool_without_name",
        "step 2 has a tool with no name; set tool.name on every step that has a tool",
    )


def test_zero_steps_is_valid_and_kept(tmp_path: Path) -> None:
    rows = _rows(tmp_path, _trace(steps=[]), _trace("kp:trace:2", steps=None))

    valid, quarantine = partition(rows)

    assert valid["trace_id"].to_list() == ["kp:trace:1", "kp:trace:2"]
    assert valid["steps"].to_list() == [[], []]
    assert quarantine.is_empty()


def test_first_broken_rule_in_documented_order_wins(tmp_path: Path) -> None:
    trace = _trace(None, metadata__success=None, outcome__confidence=2.0)
    trace["steps"][0]["type"] = "plan"
    assert _only_rule(tmp_path, trace)[0] == "missing_id"
    assert _only_rule(tmp_path, _trace(metadata__success=None, outcome__confidence=2.0))[0] == (
        "missing_success"
    )


def test_read_rule_comes_first(tmp_path: Path) -> None:
    rule, reason = _only_rule(tmp_path, _trace(None, outcome__confidence="high"))
    assert rule == "wrong_type"
    assert reason == "outcome.confidence must be a number, got str 'high'"


def test_invalid_json_line_is_quarantined_with_its_line_number(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(_trace()) + "\n{nope\n", encoding="utf-8")

    _, quarantine = partition(read_traces([path]).rows)

    assert quarantine.select("row_number", "trace_id", "rule").rows() == [(2, None, "invalid_json")]


def test_duplicate_id_with_different_content_keeps_the_last(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(json.dumps(_trace()) + "\n", encoding="utf-8")
    rows = read_traces([tmp_path / "a.jsonl"]).rows
    later = _rows(tmp_path, _trace("kp:trace:2"), _trace(outcome__confidence=0.3), name="b.jsonl")

    valid, quarantine = partition(pl.concat([rows, later]))

    b_file = str((tmp_path / "b.jsonl").resolve())
    assert valid.select("trace_id", "confidence").rows() == [
        ("kp:trace:2", 0.8),
        ("kp:trace:1", 0.3),
    ]
    assert quarantine.select("row_number", "rule").rows() == [(1, "duplicate_id")]
    assert quarantine["reason"][0] == (
        f"id 'kp:trace:1' appears again in {b_file} row 2 with different content; "
        "that later occurrence is scored and replaces this one"
    )


def test_duplicate_id_with_identical_content_is_a_no_op(tmp_path: Path) -> None:
    rows = _rows(tmp_path, _trace(), _trace(), _trace())

    valid, quarantine = partition(rows)

    assert valid["row_number"].to_list() == [3]
    assert quarantine["row_number"].to_list() == [1, 2]
    assert quarantine["reason"].str.contains("content is identical, so this copy is a no-op").all()
    assert quarantine["reason"].str.contains("row 3").all()


def test_invalid_rows_do_not_take_part_in_duplicates(tmp_path: Path) -> None:
    rows = _rows(tmp_path, _trace(), _trace(outcome__confidence=None))

    valid, quarantine = partition(rows)

    assert valid["row_number"].to_list() == [1]
    assert quarantine.select("row_number", "rule").rows() == [(2, "invalid_confidence")]


def test_partition_columns(tmp_path: Path) -> None:
    rows = _rows(tmp_path, _trace(), _trace("kp:trace:2", task__objective=None))

    valid, quarantine = partition(rows)

    assert valid.columns == [c for c in rows.columns if c not in ("read_rule", "read_reason")]
    assert tuple(quarantine.columns) == QUARANTINE_COLUMNS
    expected = pl.DataFrame(
        {
            "source_file": [str((tmp_path / "t.jsonl").resolve())],
            "row_number": [2],
            "trace_id": ["kp:trace:2"],
            "rule": ["missing_objective"],
            "reason": ["task.objective is missing; expected a string (an empty string is allowed)"],
        },
        schema={
            "source_file": pl.String,
            "row_number": pl.Int64,
            "trace_id": pl.String,
            "rule": pl.String,
            "reason": pl.String,
        },
    )
    assert_frame_equal(quarantine, expected)


def test_partition_accepts_rows_that_already_have_a_rule(tmp_path: Path) -> None:
    rows = _rows(tmp_path, _trace(), _trace(), _trace("kp:trace:2", metadata__success=None))

    assert_frame_equal(partition(_ruled(rows))[1], partition(rows)[1])


def test_every_file_balances_rows_read_with_valid_plus_quarantined(tmp_path: Path) -> None:
    bad_step = _trace("kp:trace:4")
    bad_step["steps"][0]["type"] = "plan"
    (tmp_path / "a.jsonl").write_text(
        "\n".join(
            [
                json.dumps(_trace()),
                "{oops",
                json.dumps(_trace("kp:trace:2", outcome__confidence=9)),
                json.dumps(bad_step),
                json.dumps(_trace()),
            ]
        ),
        encoding="utf-8",
    )
    pq.write_table(
        pa.Table.from_pylist([_trace("kp:trace:2"), _trace("kp:trace:3", metadata__success=None)]),
        tmp_path / "b.parquet",
    )
    (tmp_path / "c.parquet").write_bytes(b"PAR1 truncated")
    result = read_traces([tmp_path])

    valid, quarantine = partition(result.rows)

    for info in result.files:
        scored = valid.filter(pl.col("source_file") == info.path).height
        rejected = quarantine.filter(pl.col("source_file") == info.path).height
        assert info.rows_read == scored + rejected, info
    assert sorted(quarantine["rule"].to_list()) == [
        "duplicate_id",
        "invalid_confidence",
        "invalid_json",
        "missing_success",
        "unknown_step_type",
    ]
    assert [info.rule for info in result.files] == [None, None, "unreadable_file"]


_FAULTS: dict[str, dict[str, Any]] = {
    "none": {},
    "missing_id": {"id": None},
    "invalid_created_at": {"metadata__created_at": "soon"},
    "missing_success": {"metadata__success": None},
    "invalid_confidence": {"outcome__confidence": 1.01},
    "missing_objective": {"task__objective": None},
    "wrong_type": {"outcome__result_summary": 3},
}


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(st.integers(0, 4), st.sampled_from(sorted(_FAULTS))), min_size=1, max_size=12
    )
)
def test_every_row_is_either_valid_or_quarantined_once(
    tmp_path: Path, spec: list[tuple[int, str]]
) -> None:
    traces = [_trace(f"kp:trace:{n}", **_FAULTS[fault]) for n, fault in spec]
    rows = _rows(tmp_path, *traces)

    valid, quarantine = partition(rows)

    assert valid.height + quarantine.height == len(spec)
    assert set(quarantine["rule"].to_list()) <= set(RULES)
    assert valid["trace_id"].is_unique().all()
    expected = {f for _, f in spec if f != "none"}
    assert expected <= set(quarantine["rule"].to_list())


def test_reasons_shorten_huge_values(tmp_path: Path) -> None:
    rule, reason = _only_rule(tmp_path, _trace(metadata__created_at="x" * 10_000))
    assert rule == "invalid_created_at"
    assert reason is not None
    assert reason.startswith("metadata.created_at '" + "x" * 57 + "...' is not")
