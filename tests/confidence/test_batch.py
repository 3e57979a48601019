"""The batch expressions and derived mode against the object API, row by row."""

from __future__ import annotations

import itertools

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from transforms.confidence import (
    ConfidenceCalculator,
    ConfidenceFactors,
    derived_factors,
    step_scores,
    trace_levels,
)
from transforms.confidence.batch import FACTOR_SCHEMA
from transforms.confidence.reference import reference_trace_confidence
from transforms.config.confidence import ConfidenceConfig
from transforms.synth.traces import synthetic_traces

unit = st.none() | st.floats(0.0, 1.0)
count = st.none() | st.integers(0, 5)


@st.composite
def factors(draw: st.DrawFn) -> ConfidenceFactors:
    calls = draw(st.integers(0, 4))
    return ConfidenceFactors(
        is_search_step=draw(st.booleans()),
        search_result_count=draw(count),
        search_scores=tuple(draw(st.lists(st.floats(0.0, 1.0), max_size=3))),
        tool_calls=calls,
        tool_successes=draw(st.integers(0, calls)),
        source_count=draw(count),
        source_agreement=draw(unit),
        llm_self_eval=draw(unit),
        query_coverage=draw(unit),
    )


def factor_frame(rows: list[ConfidenceFactors]) -> pl.LazyFrame:
    return pl.DataFrame(
        [
            {
                "trace_id": "t",
                "step_index": i,
                "is_search_step": f.is_search_step,
                "search_result_count": f.search_result_count,
                "search_score_mean": sum(f.search_scores) / len(f.search_scores)
                if f.search_scores
                else None,
                "tool_calls": f.tool_calls,
                "tool_successes": f.tool_successes,
                "source_count": f.source_count,
                "source_agreement": f.source_agreement,
                "llm_self_eval": f.llm_self_eval,
                "query_coverage": f.query_coverage,
            }
            for i, f in enumerate(rows)
        ],
        schema=FACTOR_SCHEMA,
    ).lazy()


@settings(max_examples=60, deadline=None)
@given(st.lists(factors(), min_size=1, max_size=8), st.sampled_from(["mean", "min", "weighted"]))
def test_step_scores_equal_calculate(rows: list[ConfidenceFactors], method: str) -> None:
    config = ConfidenceConfig(aggregation=method)  # type: ignore[arg-type]
    scored = step_scores(factor_frame(rows), config).collect()
    calculator = ConfidenceCalculator(config)
    for row, f in zip(scored.iter_rows(named=True), rows, strict=True):
        expected = calculator.calculate(f)
        assert row["score"] == pytest.approx(expected.score, abs=1e-12)
        assert tuple(row["penalties"]) == expected.penalties_applied
        for key, value in expected.breakdown.items():
            assert row[key] == (None if value is None else pytest.approx(value, abs=1e-12))
    (trace,) = trace_levels(scored.lazy(), config).collect().iter_rows(named=True)
    from transforms.confidence import ConfidenceAggregator

    expected_scores = [calculator.calculate(f) for f in rows]
    assert trace["aggregate"] == pytest.approx(
        ConfidenceAggregator(config).aggregate(expected_scores), abs=1e-12
    )


STEP = pl.Struct({"step_id": pl.Int64, "type": pl.String, "tool_name": pl.String})
EDGE_TRACES = [
    ("empty", 0.9, []),
    ("thought-only", 0.5, [{"step_id": 0, "type": "thought", "tool_name": None}]),
    (
        "failed-search",
        0.8,
        [
            {"step_id": 0, "type": "tool_call", "tool_name": "web_search"},
            {"step_id": 1, "type": "error_recovery", "tool_name": None},
            {"step_id": 2, "type": "tool_call", "tool_name": "calendar"},
        ],
    ),
    (
        "nameless-tool-last",
        0.7,
        [
            {"step_id": 0, "type": "thought", "tool_name": None},
            {"step_id": 5, "type": "tool_call", "tool_name": None},
        ],
    ),
]


def traces_frame(rows: list[tuple[str, float, list[dict[str, object]]]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "trace_id": [r[0] for r in rows],
            "confidence": [r[1] for r in rows],
            "steps": [r[2] for r in rows],
        },
        schema={"trace_id": pl.String, "confidence": pl.Float64, "steps": pl.List(STEP)},
    )


def synthetic(n: int) -> pl.DataFrame:
    el = pl.element().struct
    return synthetic_traces(n, seed=3).select(
        trace_id="id",
        confidence=pl.col("outcome").struct.field("confidence"),
        steps=pl.col("steps").list.eval(
            pl.struct(
                step_id=el.field("step_id"),
                type=el.field("type"),
                tool_name=el.field("tool").struct.field("name"),
            )
        ),
    )


@pytest.mark.parametrize(
    ("method", "source"),
    list(itertools.product(["mean", "min", "weighted"], ["edge", "synthetic"])),
)
def test_derived_batch_equals_reference(method: str, source: str) -> None:
    config = ConfidenceConfig(aggregation=method)  # type: ignore[arg-type]
    traces = traces_frame(EDGE_TRACES) if source == "edge" else synthetic(1500)
    scored = step_scores(derived_factors(traces.lazy(), config.search_tool_pattern), config)
    levels = trace_levels(scored, config, ordered=True).collect()
    shuffled = trace_levels(
        scored.collect().sample(fraction=1.0, shuffle=True, seed=1).lazy(), config
    )
    assert_frame_equal(levels, shuffled.collect(), check_row_order=False)
    assert levels.height == traces.height
    by_id = {row["trace_id"]: row for row in levels.iter_rows(named=True)}
    for trace in traces.iter_rows(named=True):
        expected = reference_trace_confidence(trace["steps"], trace["confidence"], config)
        got = by_id[trace["trace_id"]]
        assert got["aggregate"] == pytest.approx(expected.aggregate, abs=1e-12)
        assert (got["level"], got["reason"], got["recommended_action"]) == (
            expected.level.value,
            expected.reason,
            expected.recommended_action,
        )
        assert got["steps"] == len(expected.steps)


def test_derived_rules_on_edge_traces() -> None:
    config = ConfidenceConfig()
    steps = derived_factors(traces_frame(EDGE_TRACES).lazy(), config.search_tool_pattern).collect()
    failed = steps.filter(pl.col("trace_id") == "failed-search").sort("step_index")
    assert failed["step_kind"].to_list() == ["tool_call", "tool_call", "answer"]
    assert failed["source_step_id"].to_list() == [0, 2, None]
    assert failed["is_search_step"].to_list() == [True, False, False]
    assert failed["tool_successes"].to_list() == [0, 1, 1]
    assert failed["search_result_count"].to_list() == [0, None, 0]
    assert failed["source_count"].to_list() == [None, None, 1]
    empty = steps.filter(pl.col("trace_id") == "empty")
    assert empty.select(
        "step_kind", "step_index", "tool_calls", "source_count", "llm_self_eval"
    ).row(0) == ("answer", 0, 0, 0, 0.9)
    nameless = steps.filter(pl.col("trace_id") == "nameless-tool-last").sort("step_index")
    assert nameless["is_search_step"].to_list() == [False, False]
    assert nameless["tool_successes"].to_list() == [1, 1]
