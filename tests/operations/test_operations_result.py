"""Operation result: applying the actual operations, failure reasons, the 0.6/0.4 formula."""

from __future__ import annotations

import pytest
from operations_helpers import case, frame, op, result

from transforms.operations.per_case import reference_case
from transforms.operations.prepare import prepare_cases
from transforms.operations.simulate import simulate

RESULT = "operation-result"


def document(one: dict) -> list[tuple[str | None, str]]:
    simulation = simulate(prepare_cases(frame(one)))
    pages = {row["page_code"]: row["page"] for row in simulation.blocks.iter_rows(named=True)}
    return [
        (pages.get(r["page_code"]), r["content"]) for r in simulation.document.iter_rows(named=True)
    ]


def test_inserts_land_before_and_after_their_block_as_if_applied_one_by_one() -> None:
    actual = [
        op("insert", "b1", "A1"),
        op("insert", "b1", "A2", position="after"),
        op("insert", "b1", "B1", position="before"),
        op("insert", "b1", "B2", position="before"),
        op("update", "b1", "middle"),
        op("insert", "b3", "faq note", position="before"),
    ]
    assert document(case(actual=actual)) == [
        ("Guide", "# Checkout"),
        ("Guide", "B1"),
        ("Guide", "B2"),
        ("Guide", "middle"),
        ("Guide", "A2"),
        ("Guide", "A1"),
        ("Guide", "Pay with a card."),
        ("FAQ", "faq note"),
        ("FAQ", "Refunds take five days."),
    ]


def test_last_update_wins_and_an_insert_survives_its_anchor_deletion() -> None:
    actual = [
        op("update", "b1", "one"),
        op("replace", "b1", "two"),
        op("insert", "b2", "kept"),
        op("delete", "b2"),
        op("update", "b0", None),
    ]
    assert [content for _, content in document(case(actual=actual))] == [
        "",
        "two",
        "kept",
        "Refunds take five days.",
    ]


def test_score_is_point_six_success_plus_point_four_content() -> None:
    actual = [op("update", "b1", "Add items to the basket."), op("delete", "b9")]
    patterns = [{"pattern": "basket"}, {"pattern": "wallet"}]
    score, details = result(case([op("update", "b1", "x")], actual, patterns), RESULT)
    assert score == 0.5 * 0.6 + 0.5 * 0.4
    assert details["applicationSuccessRate"] == 0.5 and details["contentScore"] == 0.5
    assert details["appliedOperations"] == 1 and details["totalOperations"] == 2


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (op("update", "b9", "x"), "unknown block"),
        (op("update", None, "x", target_index=7), "unknown block"),
        (op("delete", "b1"), "block already deleted"),
        (op("modify", "b1", "x"), "invalid type"),
        (op(None, "b1", "x"), "invalid type"),
        (op("insert", "b1", "x", position="middle"), "invalid position"),
    ],
)
def test_each_failure_reason(bad: dict, reason: str) -> None:
    actual = [op("delete", "b1"), bad] if reason == "block already deleted" else [bad]
    _, details = result(case(actual=actual), RESULT)
    (failed,) = details["failedOperations"]
    assert failed["reason"] == reason and failed["index"] == len(actual) - 1


def test_operations_after_a_delete_of_their_block_fail() -> None:
    actual = [op("delete", "b1"), op("update", "b1", "x"), op("insert", "b1", "y")]
    _, details = result(case(actual=actual), RESULT)
    assert [f["reason"] for f in details["failedOperations"]] == ["block already deleted"] * 2


@pytest.mark.parametrize(
    ("expected", "rate"), [([], 1.0), ([op("delete", "b1")], 0.0)], ids=["none expected", "some"]
)
def test_no_actual_operations(expected: list, rate: float) -> None:
    score, details = result(case(expected, []), RESULT)
    assert details["applicationSuccessRate"] == rate and score == rate * 0.6 + 0.4


def test_sequential_reference_agrees_on_a_tangle_of_operations() -> None:
    actual = [
        op("insert", "b2", "i1", position="before"),
        op("delete", "b2"),
        op("insert", "b2", "i2"),
        op("update", None, "u", target_index=0),
        op("insert", "b0", "i3"),
        op("insert", "b0", "i4", position="before"),
    ]
    one = case(actual=actual, patterns=[{"pattern": "i4\\nu\\ni3\\nAdd items to the cart\\.\\ni1"}])
    score, _ = result(one, RESULT)
    expected_score, _ = reference_case(one)[0][RESULT]
    assert score == expected_score == 0.6 * 5 / 6 + 0.4
