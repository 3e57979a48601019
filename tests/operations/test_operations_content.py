"""Content quality: regex search in the edited pages, issues, invalid patterns."""

from __future__ import annotations

import pytest
from operations_helpers import DOC, case, case_row, op, result, scored

CONTENT = "content-quality"


def pattern(text: str | None, page: str | None = None, ci: bool = False) -> dict:
    return {"pattern": text, "page": page, "case_insensitive": ci}


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("要約|まとめ|サマリー", True),
        (".*置換後.*", True),
        ("Cart.*Cart.*Cart", True),
        ("^完全に一致するテキスト$", False),
        ("cart", False),
    ],
    ids=["alternatives", "partial", "repeated", "anchored", "case-sensitive"],
)
def test_the_seeds_pattern_shapes(text: str, found: bool) -> None:
    blocks = [{"id": "b0", "page": "P", "content": "まとめ: 置換後の Cart, Cart and Cart"}]
    score, details = result(case(patterns=[pattern(text, "P")], blocks=blocks), CONTENT)
    assert score == (1.0 if found else 0.0)
    assert details["matchedPatterns"] == int(found) and details["totalPatterns"] == 1


def test_case_insensitive_flag() -> None:
    score, _ = result(case(patterns=[pattern("CHECKOUT", "Guide", ci=True)]), CONTENT)
    assert score == 1.0


def test_issue_text_and_excerpt() -> None:
    blocks = [{"id": "b0", "page": "P", "content": "x" * 150}]
    _, details = result(case(patterns=[pattern("y+", "P"), pattern("z")], blocks=blocks), CONTENT)
    assert details["contentIssues"] == [
        f"Page 'P': Pattern 'y+' not found in content: '{'x' * 100}...'",
        f"Page '(all pages)': Pattern 'z' not found in content: '{'x' * 100}...'",
    ]


def test_page_patterns_search_their_page_and_global_ones_every_page() -> None:
    patterns = [pattern("Refunds", "Guide"), pattern("Refunds", "FAQ"), pattern("Refunds.*\\n?")]
    score, details = result(case(patterns=patterns), CONTENT)
    assert score == pytest.approx(2 / 3)
    assert details["contentIssues"][0].startswith("Page 'Guide': Pattern 'Refunds' not found")
    _, whole = result(case(patterns=[pattern("cart\\.\\nPay")]), CONTENT)
    assert whole["matchedPatterns"] == 1  # blocks join with newlines, in document order


def test_patterns_search_the_edited_content() -> None:
    edits = [op("update", "b1", "Add items to the basket."), op("delete", "b2")]
    patterns = [pattern("basket", "Guide"), pattern("card", "Guide"), pattern("cart")]
    score, details = result(case(edits, edits, patterns), CONTENT)
    assert score == pytest.approx(1 / 3)
    assert details["contentIssues"][0] == (
        "Page 'Guide': Pattern 'card' not found in content: "
        "'# Checkout\nAdd items to the basket....'"
    )


def test_no_patterns_scores_one() -> None:
    assert result(case(), CONTENT) == (
        1.0,
        {"matchedPatterns": 0, "totalPatterns": 0, "contentIssues": []},
    )


def test_invalid_regex_is_an_input_error_of_its_case_only() -> None:
    bad = case(patterns=[pattern("(unclosed", "Guide"), pattern("cart")], case_id="bad")
    good = case(patterns=[pattern("cart")], case_id="good")
    out = scored(bad, good)
    rows = {row["case_id"]: row for row in out.cases.iter_rows(named=True)}
    assert rows["bad"]["error"] == (
        "expected pattern 0 ('(unclosed') is not a valid regular expression: unclosed group"
    )
    assert rows["bad"]["passed"] is False
    assert rows["good"]["error"] is None and rows["good"]["passed"] is True
    score, details = result(bad, CONTENT)
    assert score == 0.5
    assert details["contentIssues"] == ["Page 'Guide': Invalid pattern '(unclosed': unclosed group"]


def test_look_around_is_outside_the_regex_dialect() -> None:
    row = case_row(case(patterns=[pattern("cart(?=\\.)")]))
    assert "is not a valid regular expression" in row["error"]
    assert "look-around" in row["error"]


def test_pattern_without_text_or_with_an_unknown_page_is_an_input_error() -> None:
    row = case_row(case(patterns=[pattern(None), pattern("cart", "Pricing")]))
    assert row["error"] == (
        "expected pattern 0 has no pattern; "
        "expected pattern 1 names page 'Pricing', which no original block is on"
    )
    _, details = result(case(patterns=[pattern(None)]), CONTENT)
    assert details["contentIssues"] == ["Page '(all pages)': Pattern missing"]


def test_a_page_emptied_by_deletes_is_searched_as_empty() -> None:
    delete = [op("delete", "b3")]
    _, details = result(case(delete, delete, [pattern("Refunds", "FAQ")]), CONTENT)
    assert details["contentIssues"] == ["Page 'FAQ': Pattern 'Refunds' not found in content: '...'"]
    assert DOC[3]["page"] == "FAQ"
