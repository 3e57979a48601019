"""The batch expressions and derived mode against the object API, row by row."""

from __future__ import annotations

import itertools

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from transforms.confidence import (
    ConfidenceAggregator,
    ConfidenceCalculator,
    ConfidenceFactors,
    derived_factors,
    step_scores,
    trace_levels,
)
from transforms.confidence.batch import FACTOR_SCHEMA
from transforms.confidence.calculator import FACTORS
from transforms.confidence.reference import reference_trace_confidence
from transforms.config.confidence import ConfidenceConfig
from transforms.synth.traces import synthetic_traces

unit = st.floats(0.0, 1.0) | st.sampled_from([0.0, 0.1, 0.6, 0.8, 0.8995, 1.0])
count = st.integers(0, 5)


@st.composite
def factors(draw: st.DrawFn) -> dict[str, object]:
    """A factors row; a missing key is a null that takes the original's default."""
    executions = draw(st.integers(0, 4))
    row: dict[str, object] = {
        "is_search_step": draw(st.booleans()),
        "search_result_count": draw(count),
        "search_avg_score": draw(unit),
        "search_max_score": draw(st.just(0.0) | unit),
        "search_score_variance": draw(st.floats(0.0, 1.0)),
        "source_agreement": draw(unit),
        "source_count": draw(count),
        "llm_self_confidence": draw(unit),
        "tool_success_rate": draw(st.just(1.0) | unit),
        "tool_execution_count": executions,
        "tool_success_count": draw(st.integers(0, executions)),
        "query_coverage": draw(unit),
    }
    dropped = draw(st.sets(st.sampled_from(sorted(row))))
    return {name: value for name, value in row.items() if name not in dropped}


def factor_frame(rows: list[dict[str, object]]) -> pl.LazyFrame:
    return pl.DataFrame(
        [{"trace_id": "t", "step_index": i, **row} for i, row in enumerate(rows)],
        schema=FACTOR_SCHEMA,
    ).lazy()


@settings(max_examples=80, deadline=None)
@given(
    st.lists(factors(), min_size=1, max_size=8),
    st.sampled_from(["mean", "min", "weighted", "critical_check"]),
    st.sampled_from(["in-memory", "streaming"]),
)
def test_step_scores_equal_calculate(
    rows: list[dict[str, object]], method: str, engine: str
) -> None:
    config = ConfidenceConfig(aggregation=method)  # type: ignore[arg-type]
    scored = step_scores(factor_frame(rows), config).collect(engine=engine)  # type: ignore[arg-type]
    calculator = ConfidenceCalculator(config)
    expected_scores = [calculator.calculate(ConfidenceFactors(**row)) for row in rows]  # type: ignore[arg-type]
    for got, expected in zip(scored.iter_rows(named=True), expected_scores, strict=True):
        assert got["score"] == expected.score
        assert tuple(got["penalties"]) == expected.penalties_applied
        for key in ("search_quality", "tool_success", "base", *(f"w_{n}" for n in FACTORS)):
            assert got[key] == expected.breakdown[key]
    levels = trace_levels(scored.lazy(), config).collect(engine=engine)  # type: ignore[arg-type]
    assert levels["aggregate"][0] == ConfidenceAggregator(config).aggregate(expected_scores)


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
    list(itertools.product(["mean", "min", "weighted", "critical_check"], ["edge", "synthetic"])),
)
@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_derived_batch_equals_reference(method: str, source: str, engine: str) -> None:
    config = ConfidenceConfig(aggregation=method)  # type: ignore[arg-type]
    traces = traces_frame(EDGE_TRACES) if source == "edge" else synthetic(1500)
    scored = step_scores(derived_factors(traces.lazy(), config.search_tool_pattern), config)
    levels = trace_levels(scored, config, ordered=True).collect(engine=engine)  # type: ignore[arg-type]
    shuffled = trace_levels(
        scored.collect().sample(fraction=1.0, shuffle=True, seed=1).lazy(), config
    )
    assert_frame_equal(levels, shuffled.collect(), check_row_order=False)
    assert levels.height == traces.height
    by_id = {row["trace_id"]: row for row in levels.iter_rows(named=True)}
    for trace in traces.iter_rows(named=True):
        expected = reference_trace_confidence(trace["steps"], trace["confidence"], config)
        got = by_id[trace["trace_id"]]
        assert got["aggregate"] == expected.aggregate
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
    assert failed["tool_success_count"].to_list() == [0, 1, 1]
    assert failed["tool_execution_count"].to_list() == [1, 1, 2]
    assert failed["tool_success_rate"].to_list() == [0.0, 1.0, 0.5]
    assert failed["search_result_count"].to_list() == [0, 0, 0]
    assert failed["search_score_variance"].to_list() == [1.0, 1.0, 1.0]
    assert failed["source_count"].to_list() == [0, 0, 1]
    assert failed["source_agreement"].to_list() == [1.0, 1.0, 1.0]
    assert failed["llm_self_confidence"].to_list() == [None, None, 0.8]
    empty = steps.filter(pl.col("trace_id") == "empty")
    assert empty.select(
        "step_kind", "step_index", "tool_execution_count", "source_count", "llm_self_confidence"
    ).row(0) == ("answer", 0, 0, 0, 0.9)
    nameless = steps.filter(pl.col("trace_id") == "nameless-tool-last").sort("step_index")
    assert nameless["is_search_step"].to_list() == [False, False]
    assert nameless["tool_success_count"].to_list() == [1, 1]


def test_derived_scores_of_a_trace_worked_by_hand() -> None:
    # failed-search: web_search then error_recovery, calendar, outcome.confidence .8.
    # web_search: cnt 0, max 0 -> SQ 0; TS 0/1 -> base 0; no_search_results, rate 0 ->
    #   tool_failures(rate=0.00), sc 0 -> no_sources: 0.0.
    # calendar: non-search, TS 1/1 alone -> 1.0; sc 0, LLM .5 < .8 -> x.7 = .7.
    # answer: TS 1/2 = .5 (.4), sc 1 (SA out), LLM .8 > .6 (.3), no successful search (SQ 0):
    #   (.2 + .24)/.7 = .6285714...; rate .5 -> x.9 = .5657142... -> .566.
    # weighted: (0*1 + .7*2 + .566*3)/6 = 3.098/6 = .5163333... -> CONFIRM.
    config = ConfidenceConfig()
    traces = traces_frame([r for r in EDGE_TRACES if r[0] == "failed-search"])
    scored = step_scores(derived_factors(traces.lazy(), config.search_tool_pattern), config)
    assert scored.collect()["score"].to_list() == [0.0, 0.7, 0.566]
    (trace,) = trace_levels(scored, config, ordered=True).collect().iter_rows(named=True)
    assert trace["aggregate"] == pytest.approx(3.098 / 6, abs=1e-15)
    assert (trace["level"], trace["penalties"]) == (
        "CONFIRM",
        ["no_search_results", "no_sources", "tool_failures(rate=0.00)", "tool_failures(rate=0.50)"],
    )
