"""The three presets on the shipped cases give the pass/fail documented in docs/operations.md."""

from __future__ import annotations

import pytest
from operations_helpers import CASES_FILE

from storage.config_files import load_scorer_set
from storage.operations.cases import read_eval_cases
from transforms.operations import score_cases
from transforms.operations.model import CASE_SCHEMA

DOCUMENTED = {
    # case:            (standard, strict, operation-focused)
    "perfect-update": (True, True, True),
    "summary-insert": (True, True, True),
    "extra-delete": (True, False, True),
    "wrong-position": (True, False, False),
    "content-weak": (False, False, True),
    "wrong-target": (False, False, False),
    "type-mismatch": (False, False, False),
    "unknown-block": (False, False, False),
    "invalid-regex": (False, False, False),
    "no-op": (True, True, True),
}

FAILING = {
    "standard": {
        "content-weak": ["content-quality"],
        "wrong-target": ["operation-accuracy", "target-block-precision"],
        "type-mismatch": ["operation-accuracy"],
        "unknown-block": ["target-block-precision"],
        "invalid-regex": ["content-quality"],
    },
    "strict": {
        "extra-delete": ["anti-hallucination"],
        "wrong-position": ["operation-accuracy"],
        "content-weak": ["content-quality"],
        "wrong-target": ["operation-accuracy", "target-block-precision", "anti-hallucination"],
        "type-mismatch": ["operation-accuracy"],
        "unknown-block": ["target-block-precision", "anti-hallucination"],
        "invalid-regex": ["content-quality"],
    },
    "operation-focused": {
        "wrong-position": ["operation-accuracy"],
        "wrong-target": ["operation-accuracy", "target-block-precision"],
        "type-mismatch": ["operation-accuracy"],
        "unknown-block": ["target-block-precision"],
        "invalid-regex": ["content-quality"],
    },
}


@pytest.mark.parametrize(
    ("column", "preset"), list(enumerate(["standard", "strict", "operation-focused"]))
)
def test_documented_pass_fail(column: int, preset: str) -> None:
    cases = read_eval_cases([CASES_FILE]).cases.select(list(CASE_SCHEMA))
    scored = score_cases(cases, load_scorer_set(None, preset).scorer_set).cases
    got = {row["case_id"]: row for row in scored.iter_rows(named=True)}
    assert {case_id: row["passed"] for case_id, row in got.items()} == {
        case_id: expected[column] for case_id, expected in DOCUMENTED.items()
    }
    assert {c: r["failed_scorers"] for c, r in got.items() if r["failed_scorers"]} == FAILING[
        preset
    ]


def test_weighted_averages_of_the_strict_preset() -> None:
    cases = read_eval_cases([CASES_FILE]).cases.select(list(CASE_SCHEMA))
    scored = score_cases(cases, load_scorer_set(None, "strict").scorer_set).cases
    averages = dict(zip(scored["case_id"], scored["weighted_average"], strict=True))
    # extra-delete: (1 + 0.9 + 1 + 0 * 2) / 5
    assert averages["extra-delete"] == pytest.approx(0.58)
    assert averages["perfect-update"] == 1.0
