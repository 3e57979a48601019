"""Operation accuracy and target block precision: matching rules, reasons, edge cases."""

from __future__ import annotations

import pytest
from operations_helpers import case, op, result

ACCURACY, PRECISION = "operation-accuracy", "target-block-precision"


def reasons(details: dict) -> list[str]:
    return [item["reason"] for item in details["unmatchedOperations"]]


def test_same_type_target_and_position_match() -> None:
    ops = [op("update", "b1", "x"), op("insert", "b2", "y", position="before"), op("delete", "b3")]
    score, details = result(case(ops, ops), ACCURACY)
    assert score == 1.0
    assert details == {
        "matchedOperations": 3,
        "totalExpectedOperations": 3,
        "unmatchedOperations": [],
        "extraOperations": [],
    }


def test_type_mismatch() -> None:
    score, details = result(case([op("replace", "b1", "x")], [op("update", "b1", "x")]), ACCURACY)
    assert score == 0.0 and reasons(details) == ["type mismatch"]
    assert details["unmatchedOperations"][0]["expected"] == {
        "index": 0,
        "type": "replace",
        "targetBlockId": "b1",
        "targetIndex": None,
        "position": None,
        "content": "x",
    }


def test_target_mismatch() -> None:
    score, details = result(case([op("update", "b1", "x")], [op("update", "b2", "x")]), ACCURACY)
    assert score == 0.0 and reasons(details) == ["target mismatch"]
    assert [extra["targetBlockId"] for extra in details["extraOperations"]] == ["b2"]


def test_position_mismatch_only_for_inserts() -> None:
    expected = [
        op("insert", "b1", "n", position="before"),
        op("update", "b2", "x", position="before"),
    ]
    actual = [op("insert", "b1", "n", position="after"), op("update", "b2", "x", position="after")]
    score, details = result(case(expected, actual), ACCURACY)
    assert score == 0.5 and reasons(details) == ["position mismatch"]


def test_insert_without_position_means_after() -> None:
    score, _ = result(
        case([op("insert", "b1", "n")], [op("insert", "b1", "n", position="after")]), ACCURACY
    )
    assert score == 1.0


def test_target_by_index_matches_target_by_id() -> None:
    score, _ = result(
        case([op("update", "b2", "x")], [op("update", None, "x", target_index=2)]), ACCURACY
    )
    assert score == 1.0


def test_order_of_the_actual_operations_does_not_matter() -> None:
    ops = [op("update", "b1", "x"), op("delete", "b3"), op("insert", "b0", "y")]
    assert result(case(ops, ops[::-1]), ACCURACY)[0] == 1.0
    assert result(case(ops, ops[::-1]), PRECISION)[0] == 1.0


def test_duplicate_actual_operation_matches_once_and_is_listed_as_extra() -> None:
    score, details = result(
        case([op("delete", "b3")], [op("delete", "b3"), op("delete", "b3")]), ACCURACY
    )
    assert score == 1.0
    assert [extra["index"] for extra in details["extraOperations"]] == [1]


def test_duplicate_expected_operation_needs_two_actual_ones() -> None:
    score, details = result(
        case([op("update", "b1", "x"), op("update", "b1", "x")], [op("update", "b1", "x")]),
        ACCURACY,
    )
    assert score == 0.5
    assert details["matchedOperations"] == 1 and reasons(details) == ["target mismatch"]


@pytest.mark.parametrize(
    ("expected", "actual", "score"),
    [([], [], 1.0), ([], [op("delete", "b1")], 0.0), ([op("delete", "b1")], [], 0.0)],
    ids=["nothing expected or done", "nothing expected, something done", "nothing done"],
)
def test_empty_sides(expected: list, actual: list, score: float) -> None:
    got, details = result(case(expected, actual), ACCURACY)
    assert got == score
    assert reasons(details) == ["target mismatch"] * len(expected)


def test_unknown_block_and_unknown_type_never_match() -> None:
    _, details = result(
        case(
            [op("update", "b1", "x"), op("update", "b2", "y")],
            [op("update", "b9", "x"), op("modify", "b2", "y")],
        ),
        ACCURACY,
    )
    assert reasons(details) == ["target mismatch", "type mismatch"]


def test_precision_counts_id_or_index() -> None:
    expected = [op("update", "b1", "x", target_index=1), op("update", "b2", "y", target_index=2)]
    actual = [op("update", "b9", "x", target_index=1), op("update", "b2", "y", target_index=0)]
    score, details = result(case(expected, actual), PRECISION)
    assert score == 1.0
    assert details == {"correctTargets": 2, "totalTargets": 2, "incorrectTargets": []}


def test_precision_lists_incorrect_targets_with_both_sides() -> None:
    expected = [op("update", "b1", "x", target_index=1), op("delete", "b3")]
    actual = [op("update", "b2", "x", target_index=2), op("delete", "b3"), op("delete", "b0")]
    score, details = result(case(expected, actual), PRECISION)
    assert score == pytest.approx(1 / 3)
    assert details["totalTargets"] == 3 and details["correctTargets"] == 1
    assert details["incorrectTargets"] == [
        {
            "expected": {"index": 0, "targetBlockId": "b1", "targetIndex": 1},
            "actual": {"index": 0, "targetBlockId": "b2", "targetIndex": 2},
        },
        {"expected": None, "actual": {"index": 2, "targetBlockId": "b0", "targetIndex": None}},
    ]


def test_precision_missing_actual_operation() -> None:
    score, details = result(
        case([op("delete", "b1"), op("delete", "b2")], [op("delete", "b2")]), PRECISION
    )
    assert score == 0.5
    assert details["incorrectTargets"] == [
        {"expected": {"index": 0, "targetBlockId": "b1", "targetIndex": None}, "actual": None}
    ]


def test_precision_duplicates_pair_once_and_empty_is_perfect() -> None:
    assert result(case([op("delete", "b1")], [op("delete", "b1")] * 2), PRECISION)[0] == 0.5
    assert result(case([], []), PRECISION)[0] == 1.0
    assert result(case([], [op("delete", "b1")]), PRECISION)[0] == 0.0
