"""SourceAgreementCalculator: how much the sources' answers agree, by embedding cosine."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from transforms.embedding import Embedder

__all__ = ["SourceAgreementCalculator", "mean_pairwise_cosine"]


def mean_pairwise_cosine(
    vectors: npt.NDArray[np.float32], sizes: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    """Per group of consecutive rows (group i has sizes[i] rows), the mean cosine over all
    pairs of distinct rows, clamped to [0, 1]; 1.0 for groups of fewer than two.

    For unit vectors the sum of the pairwise cosines is (|sum v|^2 - n) / 2, so every group
    takes one pass over its rows instead of n^2 / 2 products.
    """
    out = np.ones(len(sizes), dtype=np.float64)
    if len(sizes) == 0 or vectors.shape[0] == 0:
        return out
    unit = vectors.astype(np.float64)
    norms = np.linalg.norm(unit, axis=1, keepdims=True)
    unit = np.divide(unit, norms, out=np.zeros_like(unit), where=norms > 0)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    nonempty = sizes > 0
    sums = np.zeros((len(sizes), unit.shape[1]))
    sums[nonempty] = np.add.reduceat(unit, starts[nonempty], axis=0)
    self_terms = np.zeros(len(sizes))
    self_terms[nonempty] = np.add.reduceat((unit * unit).sum(axis=1), starts[nonempty])
    pairs = sizes >= 2
    n = sizes[pairs].astype(np.float64)
    squared = (sums[pairs] ** 2).sum(axis=1)
    out[pairs] = np.clip((squared - self_terms[pairs]) / (n * (n - 1)), 0.0, 1.0)
    return out


class SourceAgreementCalculator:
    """Agreement of several answers to one question: their mean pairwise embedding cosine.

    Args:
        embedder: the project's embedder (pipelines.embedder), or any Embedder.
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def calculate(self, answers: Sequence[str]) -> float:
        """Mean pairwise cosine in [0, 1]; 1.0 with fewer than two answers (no model call)."""
        return float(self.calculate_many([answers])[0])

    def calculate_many(self, answer_sets: Sequence[Sequence[str]]) -> npt.NDArray[np.float64]:
        """`calculate` for many answer sets, embedding every distinct text once in one batch."""
        sizes = np.array([len(s) if len(s) >= 2 else 0 for s in answer_sets], dtype=np.int64)
        texts = [text for s in answer_sets if len(s) >= 2 for text in s]
        if not texts:
            return np.ones(len(answer_sets), dtype=np.float64)
        distinct = list(dict.fromkeys(texts))
        position = {text: i for i, text in enumerate(distinct)}
        encoded = self.embedder.encode(distinct)
        vectors = encoded[[position[text] for text in texts]]
        return mean_pairwise_cosine(vectors, sizes)
