"""Factors mode: reading and checking a factors table, filling model factors, storing levels."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from conftest import table_snapshot
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from pipelines import confidence_stages as stages
from storage.confidence.factors import FACTORS_INPUT_SCHEMA, read_factors_table
from storage.errors import InputError
from storage.store.registry import held_store
from transforms.confidence import ConfidenceAggregator, ConfidenceCalculator, factors_from_row
from transforms.config.confidence import ConfidenceConfig

GOOD = [
    {
        "trace_id": "a",
        "step_index": 0,
        "is_search_step": True,
        "search_result_count": 3,
        "search_scores": [0.9, 0.7],
        "tool_calls": 1,
        "tool_successes": 1,
    },
    {
        "trace_id": "a",
        "step_index": 1,
        "tool_calls": 2,
        "tool_successes": 2,
        "source_count": 2,
        "source_agreement": 0.8,
        "llm_self_eval": 0.9,
        "query_coverage": 0.7,
    },
    {"trace_id": "b", "step_index": 0, "source_count": 0, "llm_self_eval": 0.95},
]
BAD = [
    {"trace_id": "c", "step_index": 0, "tool_calls": 1, "tool_successes": 2},
    {"trace_id": "c", "step_index": 1, "llm_self_eval": 0.9},
    {"trace_id": "d", "step_index": 0, "query_coverage": 1.5},
    {"step_index": 0},
    {"trace_id": "e", "step_index": 0},
    {"trace_id": "e", "step_index": 0},
    {"trace_id": "f", "step_index": 0, "tool_calls": "three"},
    {"trace_id": "g", "step_index": -1},
    {"trace_id": "h", "step_index": 0, "search_scores": [0.2, 1.2]},
]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{not json\n")
    return path


def test_bad_rows_are_reported_with_their_rule_not_dropped(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "f.jsonl", GOOD + BAD)
    read = read_factors_table([str(path)])
    assert read.rows["trace_id"].unique().sort().to_list() == ["a", "b"]
    rules = dict(read.quarantine.group_by("rule").len().sort("rule").iter_rows())
    assert rules == {
        "duplicate_step": 2,
        "invalid_json": 1,
        "missing_trace_id": 1,
        "negative_count": 1,
        "out_of_range": 2,
        "successes_exceed_calls": 1,
        "trace_has_rejected_rows": 1,
        "wrong_type": 1,
    }
    assert read.rows.height + read.quarantine.height == len(GOOD) + len(BAD) + 1
    reasons = dict(read.quarantine.select("rule", "reason").iter_rows())
    assert reasons["successes_exceed_calls"] == "tool_successes 2 exceeds tool_calls 1"
    assert reasons["wrong_type"] == "tool_calls must be an integer, received 'three'"
    held = read.quarantine.filter(pl.col("rule") == "trace_has_rejected_rows")
    assert held.select("trace_id", "step_index", "row_number").row(0) == ("c", 1, 5)


def test_parquet_and_jsonl_read_the_same(tmp_path: Path) -> None:
    jsonl = tmp_path / "f.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in GOOD))
    parquet = tmp_path / "f.parquet"
    pl.DataFrame(GOOD, schema=FACTORS_INPUT_SCHEMA).write_parquet(parquet)
    a = read_factors_table([str(jsonl)]).rows.drop("file", "file_hash")
    b = read_factors_table([str(parquet)]).rows.drop("file", "file_hash")
    assert a.equals(b)


def test_unknown_columns_and_paths_are_clear_errors(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_text(json.dumps({"trace_id": "a", "step_index": 0, "tool_call": 1}) + "\n")
    with pytest.raises(InputError, match="unknown columns tool_call; a factors table has"):
        read_factors_table([str(path)])
    with pytest.raises(InputError, match="does not exist"):
        read_factors_table([str(tmp_path / "missing.parquet")])
    (tmp_path / "x.csv").write_text("a")
    with pytest.raises(InputError, match="unsupported extension"):
        read_factors_table([str(tmp_path / "x.csv")])


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ({"tool_calls": 1, "tool_execution_count": 1}, "tool_calls and tool_execution_count"),
        ({"tool_successes": 1, "tool_success_count": 1}, "tool_successes and tool_success_count"),
        (
            {"llm_self_eval": 0.5, "llm_self_confidence": 0.5},
            "llm_self_eval and llm_self_confidence",
        ),
        ({"search_scores": [0.5], "search_max_score": 0.5}, "search_scores and search_max_score"),
    ],
)
def test_a_field_given_twice_is_quarantined(
    tmp_path: Path, row: dict[str, Any], reason: str
) -> None:
    path = tmp_path / "f.jsonl"
    pl.DataFrame([{"trace_id": "t", "step_index": 0, **row}]).write_ndjson(path)
    read = read_factors_table([str(path)])
    assert read.rows.is_empty()
    (rule, why) = read.quarantine.select("rule", "reason").row(0)
    assert rule == "conflicting_fields" and why.startswith(reason)


def test_rejected_lines_keep_their_keys_and_hold_their_trace(tmp_path: Path) -> None:
    rows = [
        {"trace_id": "f", "step_index": 0, "tool_calls": "three"},
        {"trace_id": "f", "step_index": 1},
        {"trace_id": 7, "step_index": 0, "tool_calls": "three"},
    ]
    path = write_jsonl(tmp_path / "f.jsonl", rows)
    read = read_factors_table([str(path)])
    assert read.rows.is_empty()
    keys = read.quarantine.sort("row_number").select("trace_id", "step_index", "rule").rows()
    assert keys == [
        ("f", 0, "wrong_type"),
        ("f", 1, "trace_has_rejected_rows"),
        (None, 0, "wrong_type"),
        (None, None, "invalid_json"),
    ]


def rating(text: str) -> FunctionModel:
    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(text)])

    return FunctionModel(reply)


def test_fill_model_factors_uses_the_embedder_and_the_llm(embedder: Any) -> None:
    rows = pl.DataFrame(
        [
            {
                "trace_id": "a",
                "step_index": 0,
                "source_answers": ["Paris is in France.", "Paris is French."],
                "query": "Where is Paris?",
                "answer": "France.",
            },
            {
                "trace_id": "a",
                "step_index": 1,
                "source_agreement": 0.1,
                "source_answers": ["x", "y"],
                "llm_self_eval": 0.2,
                "query": "q",
                "answer": "a",
            },
            {"trace_id": "a", "step_index": 2, "source_answers": ["one"]},
        ],
        schema=FACTORS_INPUT_SCHEMA,
    )
    filled = stages.fill_model_factors(rows, embedder, rating("0.8"))
    assert filled["source_count"].to_list() == [2, 2, 1]
    agreement = filled["source_agreement"].to_list()
    assert agreement[0] > 0.5 and agreement[1] == 0.1 and agreement[2] == 1.0
    assert filled["llm_self_confidence"].to_list() == [0.8, 0.2, None]
    assert filled["llm_self_eval_fallback"].to_list() == [False, None, None]
    assert filled["query_coverage"].to_list() == [0.8, 0.8, None]
    broken = stages.fill_model_factors(rows, None, rating("no idea"))
    assert broken["llm_self_confidence"].to_list() == [0.5, 0.2, None]
    assert broken["llm_self_eval_fallback"].to_list() == [True, None, None]
    assert broken["query_coverage_fallback"].to_list() == [True, True, None]
    # without an embedder: two answers get GRACE's fallback 0.5, one answer 1.0
    assert broken["source_agreement"].to_list() == [0.5, 0.1, 1.0]


def run_factors(
    db: Path, paths: list[Path], config: ConfidenceConfig, force: bool = False
) -> dict[str, int]:
    work = db.parent / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    with held_store(db) as store:
        run = store.begin_run(
            "confidence_traces", version="t", model=None, config={}, config_hash="h"
        )
        counts = stages.stage_factors(store, [str(p) for p in paths], work, config, force=force)
        rows = pl.read_parquet(work / stages.FACTORS_ROWS)
        filled = stages.fill_model_factors(rows, None, None)
        counts["rows_scored"] = stages.score_factor_rows(filled, config, run.run_id, work)
        stages.commit_stage(store, work, run.run_id)
    return counts


def test_factors_mode_stores_the_calculator_results_and_reruns_are_no_ops(tmp_path: Path) -> None:
    db = tmp_path / "scores.duckdb"
    path = write_jsonl(tmp_path / "f.jsonl", GOOD + BAD)
    config = ConfidenceConfig()
    counts = run_factors(db, [path], config)
    assert counts["rows_scored"] == 2 and counts["rows_quarantined"] == 10
    con = duckdb.connect(str(db), read_only=True)
    stored = dict(
        con.sql(
            "SELECT trace_id, aggregate FROM confidence_traces WHERE source = 'factors'"
        ).fetchall()
    )
    steps = con.sql(
        "SELECT penalties, w_source_agreement FROM confidence_steps WHERE trace_id = 'b'"
    ).fetchall()
    ((quarantined,),) = con.sql("SELECT count(*) FROM confidence_quarantine").fetchall()
    con.close()
    calc = ConfidenceCalculator(config)
    a = [calc.calculate(factors_from_row(row)) for row in GOOD[:2]]
    assert stored["a"] == pytest.approx(ConfidenceAggregator(config).aggregate(a), abs=1e-12)
    # b: TS 1.0 (.4) and self-confidence .95 (.3): (.4 + .285)/.7 = .97857...; source_count 0
    # but .95 >= .8 exempts it from no_sources -> .979
    assert stored["b"] == 0.979
    assert steps == [([], 0.0)]
    assert quarantined == 10
    before = table_snapshot(db)
    again = run_factors(db, [path], config)
    assert (again["rows_scored"], again["rows_unchanged"]) == (0, 2)
    assert table_snapshot(db) == before
