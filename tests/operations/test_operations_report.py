"""The run report: counts, the scorer table, failing cases grouped by reason, input errors."""

from __future__ import annotations

import polars as pl
from operations_helpers import CASES_FILE, case, op

from storage.config_files import load_scorer_set
from storage.operations.cases import read_eval_cases
from transforms.operations import score_cases
from transforms.operations.model import CASE_SCHEMA
from transforms.operations.run_summary import EXAMPLES, build_operations_report, case_blocks


def report_for(cases: pl.DataFrame, preset: str) -> str:
    config = load_scorer_set(None, preset)
    scored = score_cases(cases.select(list(CASE_SCHEMA)), config.scorer_set)
    counts = {"files_read": 1, "rows_read": cases.height, "rows_scored": cases.height}
    return build_operations_report(
        "r1", config, counts, {"score": 0.5}, scored.cases, scored.scores, None, case_blocks(cases)
    ).markdown


def test_report_of_the_shipped_cases_follows_the_debugging_flow() -> None:
    markdown = report_for(read_eval_cases([CASES_FILE]).cases, "all")
    assert markdown.startswith("# Operation scores: run r1, scorer set 'all'")
    assert (
        "| cases passed | 4 |" in markdown
        and "| cases with input errors (failed) | 1 |" in markdown
    )
    assert "| operation-accuracy | 1.0 | 0.8 | 0.7800 | 8 | 2 |" in markdown
    for heading in (
        "### operation-accuracy below 0.8: 2 cases",
        "### target-block-precision below 0.75: 2 cases",
        "### content-quality below 0.6: 2 cases",
        "### operation-result below 0.8: 2 cases",
        "### anti-hallucination below 1.0: 3 cases",
    ):
        assert heading in markdown
    assert "| target mismatch | 1 | 1 | wrong-target |" in markdown
    assert "| type mismatch | 1 | 1 | type-mismatch |" in markdown
    assert "| wrong-target | b2 (index 2) | b1 (index 1) |" in markdown
    assert "| unknown-block | (none) | b7 (unknown block) |" in markdown
    assert (
        "| invalid-regex | Page 'Checkout': Invalid pattern '(up to 50': unclosed group |"
        in markdown
    )
    assert "| unknown block | 1 | 1 | unknown-block |" in markdown
    assert "| new block (unknown block) | 1 | 1 | unknown-block |" in markdown
    assert "| unexpected deletion | 1 | 1 | extra-delete |" in markdown
    assert "| unspecified change | 1 | 1 | wrong-target |" in markdown
    assert "## Input errors" in markdown and "| invalid-regex | expected pattern 0" in markdown


def test_position_mismatch_and_many_examples() -> None:
    rows = [
        case(
            [op("insert", "b1", "x", position="before")], [op("insert", "b1", "x")], case_id=f"c{i}"
        )
        for i in range(7)
    ]
    markdown = report_for(pl.DataFrame(rows, schema=CASE_SCHEMA), "standard")
    assert "| position mismatch | 7 | 7 | c0, c1, c2, c3, c4 (+2) |" in markdown


def test_all_passing() -> None:
    markdown = report_for(pl.DataFrame([case(case_id="ok")], schema=CASE_SCHEMA), "strict")
    assert "Every case met every threshold." in markdown and "Pass rate: 100.0%" in markdown


def test_a_truncated_table_says_how_many_rows_it_leaves_out() -> None:
    n = EXAMPLES * 2 + 3
    rows = [
        case([op("update", "b1", "x")], [op("update", "b2", "x")], case_id=f"w{i}")
        for i in range(n)
    ]
    markdown = report_for(pl.DataFrame(rows, schema=CASE_SCHEMA), "standard")
    assert f"### target-block-precision below 0.75: {n} cases" in markdown
    assert markdown.count("| b1 | b2 |") == EXAMPLES * 2
    assert (
        "... and 3 more (their details: SELECT case_id, details FROM latest_operation_scores "
        "WHERE scorer = 'target-block-precision' AND NOT passed)" in markdown
    )
