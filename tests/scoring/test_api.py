"""The single-trace API: evaluate_value and VectorCache behave like the SDK's."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from conftest import SEED_TRACE

from tracegrade.api import ValueScorer, VectorCache
from transforms.config.scoring import EmbeddingConfig, ScoringFile


def test_vector_cache_basics() -> None:
    cache = VectorCache(max_elements=2, dimensions=3)
    assert cache.size == 0 and cache.max_cosine_similarity([1, 0, 0]) == 0.0
    cache.add([1, 0, 0])
    cache.add([0, 1, 0])
    assert cache.max_cosine_similarity([2, 0, 0]) == pytest.approx(1.0)
    cache.add([0, 0, 1])
    assert cache.size == 2
    assert cache.max_cosine_similarity([1, 0, 0]) == pytest.approx(0.0)
    cache.clear()
    assert cache.size == 0


def test_vector_cache_rejects_the_wrong_dimension_naming_both() -> None:
    cache = VectorCache(dimensions=384)
    with pytest.raises(ValueError, match="vector has 3 dimensions but the cache holds 384"):
        cache.add(np.ones(3))


def test_vector_cache_ttl_expires_entries() -> None:
    cache = VectorCache(dimensions=2, ttl=10.0)
    cache.add([1, 0], at=100.0)
    assert cache.max_cosine_similarity([1, 0], at=109.9) == pytest.approx(1.0)
    assert cache.max_cosine_similarity([1, 0], at=110.0) == 0.0
    assert cache.size == 0


def test_zero_vectors_have_cosine_zero() -> None:
    cache = VectorCache(dimensions=2)
    cache.add([0, 0])
    assert cache.max_cosine_similarity([1, 0]) == 0.0


def test_without_embedder_the_seed_trace_scores_0_66875() -> None:
    scorer = ValueScorer(ScoringFile(embedding=EmbeddingConfig(enabled=False)))
    assert scorer.evaluate(SEED_TRACE) == pytest.approx(0.66875, abs=1e-15)
    assert scorer.evaluate(SEED_TRACE) == pytest.approx(0.66875, abs=1e-15)


def test_evaluate_is_stateful_with_the_real_embedder(embedder: object) -> None:
    scorer = ValueScorer(ScoringFile(), embedder=embedder)  # type: ignore[arg-type]
    first = scorer.evaluate(SEED_TRACE)
    again = scorer.evaluate(SEED_TRACE)
    other = copy.deepcopy(SEED_TRACE)
    other["task"]["objective"] = "Plan a three-day hiking trip in the Alps with a budget"
    other["steps"] = [
        {"step_id": 0, "type": "thought", "content": "Check mountain hut availability"},
        {"step_id": 1, "type": "observation", "content": "Huts open from June"},
    ]
    different = scorer.evaluate(other)
    assert first == pytest.approx(0.66875, abs=1e-15)  # empty cache: N = 0.5
    assert again == pytest.approx(0.66875 - 0.5 * 0.35, abs=1e-6)  # its own twin: N = 0
    assert scorer.cache.size == 3
    assert different > 0.2


def test_invalid_trace_is_rejected_with_the_rule() -> None:
    bad = copy.deepcopy(SEED_TRACE)
    bad["outcome"]["confidence"] = 1.5
    scorer = ValueScorer(ScoringFile(embedding=EmbeddingConfig(enabled=False)))
    with pytest.raises(ValueError, match="invalid_confidence"):
        scorer.evaluate(bad)


def test_module_level_evaluate_value_is_exported() -> None:
    import tracegrade

    assert callable(tracegrade.evaluate_value)
    assert tracegrade.VectorCache is VectorCache
