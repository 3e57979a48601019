"""The batch expressions against the object API, row by row."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from transforms.confidence import (
    ConfidenceAggregator,
    ConfidenceCalculator,
    ConfidenceFactors,
    step_scores,
    trace_levels,
)
from transforms.confidence.batch import FACTOR_SCHEMA
from transforms.confidence.calculator import FACTORS
from transforms.config.confidence import ConfidenceConfig

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
