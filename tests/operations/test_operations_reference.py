"""The vectorized scorers against the straightforward per-case implementation, case by case."""

from __future__ import annotations

import json
import re

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.config_files import load_scorer_set
from transforms.operations import score_cases
from transforms.operations.model import CASE_SCHEMA
from transforms.operations.per_case import reference_score_cases
from transforms.operations.synth import synthetic_case_rows

_ENGINE_WORDS = re.compile(r"(Invalid pattern '[^']*'|not a valid regular expression): [^;\"]*")


def _same_words(text: str | None) -> str | None:
    """Python's re and Rust's regex word their errors differently; the rest must be equal."""
    return None if text is None else _ENGINE_WORDS.sub(r"\1: <engine message>", text)


def _compare(rows: list[dict]) -> None:
    config = load_scorer_set(None, "all")
    ours = score_cases(pl.DataFrame(rows, schema=CASE_SCHEMA), config.scorer_set)
    theirs = reference_score_cases(
        rows, [(spec.name, spec.weight, spec.threshold) for spec in config.scorer_set.scorers]
    )
    cases = ours.cases.to_dicts()
    scores = ours.scores.to_dicts()
    for i, expected in enumerate(theirs):
        got = cases[i]
        for key in ("case_id", "weighted_average", "passed", "failed_scorers"):
            assert got[key] == expected[key], (expected["case_id"], key)
        assert _same_words(got["error"]) == _same_words(expected["error"]), expected["case_id"]
        for j, (name, score, threshold, passed, weight, details) in enumerate(expected["scores"]):
            row = scores[j * len(theirs) + i]
            assert (row["case_id"], row["scorer"]) == (expected["case_id"], name)
            assert (row["score"], row["threshold"], row["passed"], row["weight"]) == (
                score,
                threshold,
                passed,
                weight,
            ), (expected["case_id"], name)
            assert json.loads(_same_words(row["details"]) or "") == json.loads(
                _same_words(details) or ""
            ), (expected["case_id"], name)


def test_identical_to_the_reference_on_generated_cases() -> None:
    rows = synthetic_case_rows(1500, seed=11)
    assert any(row["actual_operations"] == [] for row in rows)
    _compare(rows)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_identical_to_the_reference_for_any_seed(seed: int) -> None:
    _compare(synthetic_case_rows(60, seed=seed))


_ids = st.sampled_from(["b0", "b1", "b2", "b9", None])
_operations = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["insert", "update", "replace", "delete", "modify", None]),
            "target_block_id": _ids,
            "target_index": st.sampled_from([None, -1, 0, 1, 2, 7]),
            "position": st.sampled_from([None, "before", "after", "middle"]),
            "content": st.sampled_from([None, "", "x", "cart", "Cart Cart"]),
        }
    ),
    max_size=5,
)
_cases = st.fixed_dictionaries(
    {
        "case_id": st.just("c"),
        "original_blocks": st.lists(
            st.fixed_dictionaries(
                {
                    "id": st.sampled_from(["b0", "b1", "b2", None]),
                    "page": st.sampled_from(["P", "Q", None]),
                    "content": st.sampled_from([None, "", "x", "a cart", "y"]),
                }
            ),
            max_size=5,
        ),
        "expected_operations": _operations,
        "actual_operations": _operations,
        "expected_patterns": st.lists(
            st.fixed_dictionaries(
                {
                    "pattern": st.sampled_from(["cart", "Cart.*Cart", "(", "x|y", None, "x\\ny"]),
                    "page": st.sampled_from(["P", "Q", "R", None]),
                    "case_insensitive": st.booleans(),
                }
            ),
            max_size=3,
        ),
        "duration_ms": st.none(),
    }
)


@settings(max_examples=100, deadline=None)
@given(batch=st.lists(_cases, min_size=1, max_size=4))
def test_identical_to_the_reference_on_arbitrary_cases(batch: list[dict]) -> None:
    for number, one in enumerate(batch):
        one["case_id"] = f"c{number}"
    _compare(batch)
