"""Input errors: what the eval author wrote wrong fails that case with a message; the rest run."""

from __future__ import annotations

import pytest
from operations_helpers import DOC, case, case_row, op, scored


@pytest.mark.parametrize(
    ("expected", "message"),
    [
        (
            op(None, "b1"),
            "expected operation 0 has no type; use one of insert, update, replace, delete",
        ),
        (
            op("modify", "b1"),
            "expected operation 0 has type 'modify'; use one of insert, update, replace, delete",
        ),
        (
            op("insert", "b1", "x", position="middle"),
            "expected operation 0 has position 'middle'; use before or after (or leave it out for after)",
        ),
        (
            op("update", None, "x"),
            "expected operation 0 has neither target_block_id nor target_index",
        ),
        (
            op("update", None, "x", target_index=4),
            "expected operation 0 has target_index 4, outside the 4 original blocks",
        ),
        (
            op("update", "b9", "x"),
            "expected operation 0 targets block 'b9', which is not among the original blocks",
        ),
        (
            op("update", "b1", "x", target_index=2),
            "expected operation 0 targets block 'b1' at index 1 but gives target_index 2",
        ),
    ],
)
def test_expected_operation_errors(expected: dict, message: str) -> None:
    row = case_row(case([expected], [expected]))
    assert row["error"] == message and row["passed"] is False


def test_block_errors() -> None:
    blocks = [
        *DOC,
        {"id": "b1", "page": "FAQ", "content": "again"},
        {"id": None, "page": "FAQ", "content": ""},
    ]
    row = case_row(case(blocks=blocks))
    assert row["error"] == (
        "block id 'b1' appears 2 times in original_blocks; block ids must be unique within a case; "
        "original block 5 has no id"
    )


def test_every_problem_of_a_case_is_listed_in_order() -> None:
    row = case_row(
        case(
            [op("update", "b9", "x"), op("modify", "b1")],
            patterns=[{"pattern": "(", "page": "Nope"}],
        )
    )
    assert row["error"] == "; ".join(
        [
            "expected operation 0 targets block 'b9', which is not among the original blocks",
            "expected operation 1 has type 'modify'; use one of insert, update, replace, delete",
            "expected pattern 0 names page 'Nope', which no original block is on",
            "expected pattern 0 ('(') is not a valid regular expression: unclosed group",
        ]
    )


def test_the_model_output_is_never_an_input_error() -> None:
    actual = [op("modify", "b9"), op(None, None), op("insert", "b1", "x", position="middle")]
    row = case_row(case([op("update", "b1", "x")], actual))
    assert row["error"] is None and row["passed"] is False


def test_an_input_error_fails_its_case_even_with_perfect_scores() -> None:
    ops = [op("update", "b1", "x", target_index=3)]
    out = scored(case(ops, ops, case_id="broken"), case(case_id="fine"))
    assert out.scores.filter(out.scores["case_id"] == "broken")["score"].to_list() == [1.0] * 5
    assert out.cases["passed"].to_list() == [False, True]
