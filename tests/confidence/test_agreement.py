"""SourceAgreementCalculator with the real embedder and against a brute-force pairwise mean."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from transforms.confidence.agreement import SourceAgreementCalculator, mean_pairwise_cosine


def brute_force(vectors: np.ndarray) -> float:
    vectors = vectors.astype(np.float64)
    pairs = list(itertools.combinations(range(len(vectors)), 2))
    cos = [
        float(vectors[i] @ vectors[j] / np.linalg.norm(vectors[i]) / np.linalg.norm(vectors[j]))
        for i, j in pairs
    ]
    return min(max(sum(cos) / len(cos), 0.0), 1.0)


def test_segment_formula_equals_brute_force() -> None:
    rng = np.random.default_rng(0)
    sizes = np.array([0, 1, 2, 3, 5, 2], dtype=np.int64)
    vectors = rng.normal(size=(int(sizes.sum()), 8)).astype(np.float32) + 0.8
    got = mean_pairwise_cosine(vectors, sizes)
    start = 0
    for i, size in enumerate(sizes):
        expected = 1.0 if size < 2 else brute_force(vectors[start : start + size])
        assert got[i] == pytest.approx(expected, abs=1e-9)
        start += size


def test_opposite_answers_clamp_to_zero() -> None:
    vectors = np.array([[1.0, 0.0], [-1.0, 0.0]], dtype=np.float32)
    assert mean_pairwise_cosine(vectors, np.array([2]))[0] == 0.0


class CountingEmbedder:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[list[str]] = []

    @property
    def model_key(self) -> str:
        return str(self.inner.model_key)

    def encode(self, texts: Any) -> Any:
        self.calls.append(list(texts))
        return self.inner.encode(texts)


def test_fewer_than_two_answers_give_one_without_the_model(embedder: Any) -> None:
    counting = CountingEmbedder(embedder)
    calculator = SourceAgreementCalculator(counting)
    assert calculator.calculate([]) == 1.0
    assert calculator.calculate(["only one"]) == 1.0
    assert counting.calls == []


def test_real_embedder_agreement_and_one_batch(embedder: Any) -> None:
    counting = CountingEmbedder(embedder)
    calculator = SourceAgreementCalculator(counting)
    same = ["Paris is the capital of France.", "The capital of France is Paris."]
    different = ["Paris is the capital of France.", "Bananas are rich in potassium."]
    agree, disagree, single = calculator.calculate_many([same, different, ["x"]])
    assert len(counting.calls) == 1
    assert len(counting.calls[0]) == 3
    assert agree > 0.8 > disagree
    assert single == 1.0
    vectors = embedder.encode(same)
    assert agree == pytest.approx(brute_force(vectors), abs=1e-6)
