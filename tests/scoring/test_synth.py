"""Synthetic traces and the demo archive: shape, determinism, and the faults they carry."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

from tracegrade.demo import BAD_RULES, EMPTY_FILE_NAME, expected_counts, write_demo_archive
from transforms.synth.traces import STEP_TYPES, TRACE_CONTEXT, synthetic_traces, to_json_records

START = datetime(2026, 3, 1, tzinfo=UTC)
NESTED_SCHEMA = pl.Schema(
    {
        "id": pl.String,
        "metadata": pl.Struct(
            {
                "created_at": pl.Datetime("us", "UTC"),
                "agent_id": pl.String,
                "task_domain": pl.String,
                "success": pl.Boolean,
                "quality_score": pl.Float64,
            }
        ),
        "task": pl.Struct({"objective": pl.String}),
        "steps": pl.List(
            pl.Struct(
                {
                    "step_id": pl.Int64,
                    "type": pl.String,
                    "content": pl.String,
                    "tool": pl.Struct({"name": pl.String}),
                    "input": pl.String,
                    "output_summary": pl.String,
                    "latency_ms": pl.Float64,
                }
            )
        ),
        "outcome": pl.Struct({"result_summary": pl.String, "confidence": pl.Float64}),
    }
)
UUID_ID = re.compile(
    r"^kp:trace:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
)


@pytest.fixture(scope="module")
def traces() -> pl.DataFrame:
    return synthetic_traces(2000, seed=7, start=START, days=10)


@pytest.fixture(scope="module")
def steps(traces: pl.DataFrame) -> pl.DataFrame:
    return traces.select("id", "steps").explode("steps").unnest("steps").drop_nulls("step_id")


def test_same_seed_gives_the_same_frame_and_another_seed_another(traces: pl.DataFrame) -> None:
    assert_frame_equal(synthetic_traces(2000, seed=7, start=START, days=10), traces)
    other = synthetic_traces(2000, seed=8, start=START, days=10)
    assert not set(other["id"]).intersection(traces["id"])


def test_frame_has_the_nested_export_schema(traces: pl.DataFrame) -> None:
    assert traces.schema == NESTED_SCHEMA
    assert traces.height == 2000
    assert traces.select(pl.col("metadata").struct.field("quality_score").eq(0.0).all()).item()


def test_zero_traces_keep_the_schema() -> None:
    empty = synthetic_traces(0)
    assert empty.height == 0
    assert empty.schema == NESTED_SCHEMA


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="n=-1"):
        synthetic_traces(-1)
    with pytest.raises(ValueError, match="days=0"):
        synthetic_traces(10, days=0)


def test_ids_are_unique_uuid_formatted(traces: pl.DataFrame) -> None:
    assert traces["id"].n_unique() == traces.height
    assert all(UUID_ID.match(value) for value in traces["id"])


def test_scoring_edge_cases_are_present(traces: pl.DataFrame, steps: pl.DataFrame) -> None:
    lengths = traces.select(pl.col("steps").list.len()).to_series()
    assert (lengths == 0).sum() > 0
    assert lengths.max() == 12
    first_type = traces.select(pl.col("steps").list.first().struct.field("type")).to_series()
    assert ((lengths == 1) & (first_type == "thought")).sum() > 0
    per_trace = steps.group_by("id").agg(
        errors=(pl.col("type") == "error_recovery").sum(),
        tool_steps=pl.col("tool").is_not_null().sum(),
        tools=pl.col("tool").struct.field("name").drop_nulls().n_unique(),
    )
    assert per_trace.filter(pl.col("errors") >= 3).height > 0
    assert per_trace.filter((pl.col("tool_steps") >= 2) & (pl.col("tools") == 1)).height > 0
    assert per_trace.filter(pl.col("tools") >= 3).height > 0
    assert set(steps["type"]) == set(STEP_TYPES)
    tool_types = set(steps.filter(pl.col("tool").is_not_null())["type"])
    assert {"tool_call", "error_recovery", "observation"} <= tool_types
    assert steps["content"].null_count() > 0
    assert steps["latency_ms"].null_count() > 0


def test_metadata_mixes_agents_domains_and_outcomes(traces: pl.DataFrame) -> None:
    meta = traces.unnest("metadata")
    assert meta["agent_id"].n_unique() == 6
    assert {"finance", "code", "medical", "customer_service", "code-review", None} <= set(
        meta["task_domain"]
    )
    assert 0 < meta["success"].mean() < 1  # type: ignore[operator]
    confidence = traces.select(pl.col("outcome").struct.field("confidence")).to_series()
    assert confidence.min() >= 0.0 and confidence.max() <= 1.0  # type: ignore[operator]


def test_timestamps_fall_in_the_window_unsorted_with_ties(traces: pl.DataFrame) -> None:
    created = traces.select(pl.col("metadata").struct.field("created_at")).to_series()
    assert created.min() >= START  # type: ignore[operator]
    assert created.max() < START + timedelta(days=10)  # type: ignore[operator]
    assert not created.is_sorted()
    assert created.n_unique() < created.len()


def test_texts_repeat_sometimes_and_inputs_are_canonical_json(
    traces: pl.DataFrame, steps: pl.DataFrame
) -> None:
    text = traces.select(
        pl.col("task").struct.field("objective")
        + " "
        + pl.col("steps")
        .list.eval(pl.element().struct.field("content").fill_null(""))
        .list.join(" ")
    ).to_series()
    assert 0.6 * text.len() < text.n_unique() < text.len()
    objective_words = traces.select(
        pl.col("task").struct.field("objective").str.split(" ").list.len()
    ).to_series()
    assert 8 <= objective_words.median() <= 20  # type: ignore[operator]
    for value in steps["input"].drop_nulls():
        if value.startswith("{"):
            assert json.dumps(json.loads(value), sort_keys=True, separators=(",", ":")) == value


def test_json_records_follow_the_sdk_objects(traces: pl.DataFrame) -> None:
    frame = traces.head(200)
    records = to_json_records(frame)
    assert len(records) == 200
    first = records[0]
    assert first["@context"] == TRACE_CONTEXT and first["@type"] == "ReasoningTrace"
    stamp = first["metadata"]["created_at"]
    assert stamp.endswith("Z")
    parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    assert parsed == frame.select(pl.col("metadata").struct.field("created_at")).item(0, 0)
    all_steps = [step for record in records for step in record["steps"]]
    assert all("tool" not in step or step["tool"].get("name") for step in all_steps)
    assert any(isinstance(step.get("input"), dict) for step in all_steps)
    assert any("tool" not in step for step in all_steps)
    json.dumps(records)


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return write_demo_archive(tmp_path_factory.mktemp("a"), n_traces=600, days=6, seed=3)


def test_demo_archive_is_byte_identical_across_calls(archive: list[Path], tmp_path: Path) -> None:
    again = write_demo_archive(tmp_path, n_traces=600, days=6, seed=3)
    assert [p.name for p in again] == [p.name for p in archive]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(archive, again, strict=True))


def test_demo_archive_has_one_file_per_day_and_an_empty_file(archive: list[Path]) -> None:
    names = [p.name for p in archive]
    assert names == sorted(names)
    assert names[:3] == [
        "traces-2026-10-01.jsonl",
        "traces-2026-10-02.parquet",
        "traces-2026-10-03.jsonl",
    ]
    assert len(archive) == 6 + 1 == expected_counts(600, 6, 3)["files"]
    empty = [p for p in archive if p.name == EMPTY_FILE_NAME]
    assert len(empty) == 1 and empty[0].stat().st_size == 0


def test_demo_archive_carries_the_announced_faults(archive: list[Path]) -> None:
    expected = expected_counts(600, 6, 3)
    by_rule = expected["quarantined_by_rule"]
    assert set(by_rule) == {*BAD_RULES, "duplicate_id"}
    assert expected["records"] == expected["scored"] + expected["quarantined"]
    lines = [
        line
        for p in archive
        if p.suffix == ".jsonl"
        for line in p.read_text(encoding="utf-8").splitlines()
    ]
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            continue
    assert len(lines) - len(parsed) == by_rule["invalid_json"] > 0
    tables = [pq.read_table(p) for p in archive if p.suffix == ".parquet"]
    frame = pl.concat([pl.from_arrow(t) for t in tables])  # type: ignore[misc]
    assert isinstance(frame, pl.DataFrame)
    assert frame.schema == NESTED_SCHEMA
    assert len(lines) + frame.height == expected["records"]
    ids = [obj.get("id") for obj in parsed] + frame["id"].to_list()
    missing = sum(1 for value in ids if not value)
    assert missing == by_rule["missing_id"]
    present = [value for value in ids if value]
    assert len(present) - len(set(present)) == by_rule["duplicate_id"]
    confidences = frame.select(pl.col("outcome").struct.field("confidence")).to_series()
    assert any(c is None or math.isnan(c) or not 0 <= c <= 1 for c in confidences)
    step_types = {
        s["type"] for obj in parsed if isinstance(obj.get("steps"), list) for s in obj["steps"]
    }
    step_types |= set(frame.select(pl.col("steps").explode().struct.field("type")).to_series())
    assert "plan" in step_types


def test_demo_archive_refuses_days_it_cannot_fill() -> None:
    with pytest.raises(ValueError, match="daily files empty"):
        expected_counts(50, 30, 1)
