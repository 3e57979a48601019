"""Anti-hallucination: new blocks, unexpected deletions, unspecified changes, each reported."""

from __future__ import annotations

from operations_helpers import case, op, result

SCORER = "anti-hallucination"
CLEAN = {"newBlocks": [], "unexpectedDeletions": [], "unspecifiedChanges": []}


def test_doing_what_was_expected_is_clean() -> None:
    ops = [op("update", "b1", "x"), op("insert", "b1", "y"), op("delete", "b3")]
    score, details = result(case(ops, ops), SCORER)
    assert score == 1.0
    assert details == {
        "noNewContent": True,
        "noDeletedBlocks": True,
        "onlySpecifiedChanges": True,
        **CLEAN,
    }


def test_operation_on_a_block_that_does_not_exist_is_a_new_block() -> None:
    score, details = result(case([], [op("update", "b9", "invented")]), SCORER)
    assert score == 0.0 and details["noNewContent"] is False
    assert details["newBlocks"] == [
        {
            "index": 0,
            "type": "update",
            "targetBlockId": "b9",
            "targetIndex": None,
            "position": None,
            "content": "invented",
            "reason": "unknown block",
        }
    ]


def test_inserts_beyond_the_expected_ones_are_new_blocks() -> None:
    expected = [op("insert", "b1", "one")]
    actual = [
        op("insert", "b1", "one", position="before"),
        op("insert", "b1", "two"),
        op("insert", "b2", "three"),
    ]
    score, details = result(case(expected, actual), SCORER)
    assert score == 0.0
    assert [(b["index"], b["reason"]) for b in details["newBlocks"]] == [
        (1, "unexpected insert"),
        (2, "unexpected insert"),
    ]


def test_unexpected_deletion_is_reported_with_the_block() -> None:
    score, details = result(
        case([op("delete", "b1")], [op("delete", "b1"), op("delete", "b3")]), SCORER
    )
    assert score == 0.0 and details["noDeletedBlocks"] is False
    assert details["unexpectedDeletions"] == [
        {"blockId": "b3", "page": "FAQ", "content": "Refunds take five days."}
    ]


def test_change_to_a_block_nobody_asked_to_change_is_reported_as_a_diff() -> None:
    score, details = result(case([op("update", "b1", "x")], [op("update", "b2", "x")]), SCORER)
    assert score == 0.0 and details["onlySpecifiedChanges"] is False
    assert details["unspecifiedChanges"] == [
        {"blockId": "b2", "page": "Guide", "original": "Pay with a card.", "result": "x"}
    ]


def test_a_specified_block_may_change_whatever_the_expected_type() -> None:
    score, _ = result(case([op("delete", "b2")], [op("replace", "b2", "other")]), SCORER)
    assert score == 1.0


def test_rewriting_a_block_with_its_own_content_is_no_change() -> None:
    score, _ = result(case([], [op("update", "b2", "Pay with a card.")]), SCORER)
    assert score == 1.0


def test_failed_operations_change_nothing() -> None:
    actual = [op("delete", "b1"), op("delete", "b1"), op("insert", "b1", "late")]
    score, details = result(case([op("delete", "b1")], actual), SCORER)
    assert score == 1.0 and details["newBlocks"] == []
