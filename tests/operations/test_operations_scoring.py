"""Scorer sets: pass when every scorer meets its threshold, weighted averages, custom scorers."""

from __future__ import annotations

from typing import Any

import pytest
from operations_helpers import case, frame, op

from transforms.operations import (
    ResponseTimeScorer,
    ScorerSet,
    ScorerSpec,
    builtin_scorer,
    score_cases,
)
from transforms.operations.model import ActualOutput, ExpectedOutput


def spec(name: str, weight: float = 1.0, threshold: float = 0.5) -> ScorerSpec:
    return ScorerSpec(name, builtin_scorer(name), weight, threshold)


def test_pass_needs_every_scorer_at_or_above_its_threshold() -> None:
    # accuracy 2/3, precision 1.0
    one = case(
        [op("update", "b1", "x"), op("update", "b2", "y"), op("replace", "b3", "z")],
        [op("update", "b1", "x"), op("update", "b2", "y"), op("update", "b3", "z")],
    )
    for threshold, passed in ((2 / 3, True), (0.6, True), (0.67, False)):
        scorer_set = ScorerSet(
            "t", (spec("operation-accuracy", threshold=threshold), spec("target-block-precision"))
        )
        row = score_cases(frame(one), scorer_set).cases.row(0, named=True)
        assert row["passed"] is passed
        assert row["failed_scorers"] == ([] if passed else ["operation-accuracy"])


def test_threshold_tolerates_float_rounding() -> None:
    one = case([op("update", "b1", "x")] * 10, [op("update", "b1", "x")] * 7)
    scorer_set = ScorerSet("t", (spec("operation-accuracy", threshold=0.7),))
    scored = score_cases(frame(one), scorer_set)
    assert scored.scores["score"][0] == 0.7 and scored.cases["passed"][0]


def test_weighted_average() -> None:
    one = case([op("update", "b1", "x"), op("delete", "b2")], [op("update", "b1", "x")])
    scorer_set = ScorerSet(
        "t",
        (
            spec("operation-accuracy", weight=2.0),
            spec("target-block-precision", weight=1.5),
            spec("content-quality", weight=0.5),
        ),
    )
    scored = score_cases(frame(one), scorer_set)
    assert scored.scores["score"].to_list() == [0.5, 0.5, 1.0]
    assert scored.cases["weighted_average"][0] == pytest.approx(
        (0.5 * 2 + 0.5 * 1.5 + 1.0 * 0.5) / 4
    )
    assert scored.scores["weight"].to_list() == [2.0, 1.5, 0.5]
    assert scored.scores["threshold"].to_list() == [0.5, 0.5, 0.5]


def test_rows_come_scorer_by_scorer_in_case_order() -> None:
    scored = score_cases(
        frame(case(case_id="a"), case(case_id="b")),
        ScorerSet("t", (spec("operation-accuracy"), spec("content-quality"))),
    )
    assert scored.scores.select("scorer", "case_id").rows() == [
        ("operation-accuracy", "a"),
        ("operation-accuracy", "b"),
        ("content-quality", "a"),
        ("content-quality", "b"),
    ]
    assert scored.cases["case_id"].to_list() == ["a", "b"]


@pytest.mark.parametrize(
    ("duration", "score", "passed"),
    [
        (1000.0, 1.0, True),
        (3000.0, 1.0, True),
        (4500.0, 0.5, False),
        (6000.0, 0.0, False),
        (9000.0, 0.0, False),
    ],
)
def test_response_time_scorer_follows_the_seed(duration: float, score: float, passed: bool) -> None:
    scorer = ResponseTimeScorer(max_acceptable_ms=3000)
    actual, expected = ActualOutput("c", (), duration), ExpectedOutput("c", (), (), ())
    assert scorer.score(actual, expected) == score
    assert scorer.details(actual, expected) == {
        "responseTimeMs": duration,
        "maxAcceptableMs": 3000,
        "passed": passed,
    }


def test_response_time_scorer_rejects_a_non_positive_limit() -> None:
    with pytest.raises(ValueError, match="max_acceptable_ms must be positive"):
        ResponseTimeScorer(max_acceptable_ms=0)


class _Broken:
    def score(self, actual: ActualOutput, expected: ExpectedOutput) -> float:
        if actual.case_id == "boom":
            raise RuntimeError("no model answer")
        return 2.0 if actual.case_id == "big" else 0.25

    def details(self, actual: ActualOutput, expected: ExpectedOutput) -> dict[str, Any]:
        return {"blocks": len(expected.original_blocks), "ops": len(actual.operations)}


def test_custom_scorers_run_per_case_and_their_failures_stay_in_their_case() -> None:
    cases = frame(
        case([op("delete", "b1")], [op("delete", "b1")], case_id="ok", duration_ms=4500.0),
        case(case_id="late"),
        case(case_id="boom", duration_ms=10.0),
        case(case_id="big", duration_ms=10.0),
    )
    scorer_set = ScorerSet(
        "custom",
        (
            ScorerSpec("response-time", ResponseTimeScorer(3000), 1.0, 0.5),
            ScorerSpec("custom", _Broken(), 1.0, 0.2),
        ),
    )
    scored = score_cases(cases, scorer_set)
    rows = {r["case_id"]: r for r in scored.cases.iter_rows(named=True)}
    assert rows["ok"]["error"] is None and rows["ok"]["passed"] is True
    assert rows["late"]["error"] == (
        "scorer 'response-time' failed: ValueError: the case has no duration_ms; "
        "record the workflow's response time"
    )
    assert rows["boom"]["error"] == "scorer 'custom' failed: RuntimeError: no model answer"
    assert (
        rows["big"]["error"] == "scorer 'custom' failed: returned 2.0, expected a number in [0, 1]"
    )
    assert [rows[c]["passed"] for c in ("late", "boom", "big")] == [False] * 3
    details = scored.scores.filter(scored.scores["case_id"] == "ok")["details"].to_list()
    assert details == [
        '{"responseTimeMs": 4500.0, "maxAcceptableMs": 3000, "passed": false}',
        '{"blocks": 4, "ops": 1}',
    ]
