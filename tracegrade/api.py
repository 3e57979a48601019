"""The single-trace API mirroring the KnowledgePulse SDK: `evaluate_value` and `VectorCache`."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from pipelines.embedder import SentenceEmbedder
from transforms.config.scoring import ScoringFile
from transforms.embedding import Embedder
from transforms.novelty import EMPTY_CACHE_NOVELTY
from transforms.replay import trace_text
from transforms.value import value_features, value_score

__all__ = ["ValueScorer", "VectorCache", "evaluate_value"]


class VectorCache:
    """The SDK's vector cache: at most `max_elements` vectors, oldest evicted first, optional TTL.

    Brute-force cosine scan, as in the SDK. `ttl` is in seconds; an entry stays alive while
    `now - added_at < ttl`, where times default to the wall clock.
    """

    def __init__(
        self, max_elements: int = 1000, dimensions: int = 384, ttl: float | None = None
    ) -> None:
        if max_elements < 1:
            raise ValueError(f"max_elements is {max_elements}, expected at least 1")
        if dimensions < 1:
            raise ValueError(f"dimensions is {dimensions}, expected at least 1")
        if ttl is not None and not ttl > 0:
            raise ValueError(f"ttl is {ttl}, expected a positive number of seconds or None")
        self.max_elements = max_elements
        self.dimensions = dimensions
        self.ttl = ttl
        self._entries: deque[tuple[npt.NDArray[np.float32], float]] = deque()

    def _checked(self, vector: npt.ArrayLike) -> npt.NDArray[np.float32]:
        array = np.asarray(vector, dtype=np.float32).reshape(-1)
        if array.shape[0] != self.dimensions:
            raise ValueError(
                f"vector has {array.shape[0]} dimensions but the cache holds {self.dimensions}-dimensional "
                "vectors; embed with the model the cache was made for"
            )
        return array

    def _expire(self, now: float) -> None:
        if self.ttl is None:
            return
        while self._entries and not now - self._entries[0][1] < self.ttl:
            self._entries.popleft()

    def add(self, vector: npt.ArrayLike, at: float | None = None) -> None:
        """Add a vector (added at `at`, seconds; default now), evicting the oldest past capacity."""
        now = time.time() if at is None else at
        self._entries.append((self._checked(vector), now))
        while len(self._entries) > self.max_elements:
            self._entries.popleft()

    def max_cosine_similarity(self, query: npt.ArrayLike, at: float | None = None) -> float:
        """Highest cosine similarity between `query` and a live entry; 0.0 when there is none."""
        self._expire(time.time() if at is None else at)
        q = self._checked(query).astype(np.float64)
        if not self._entries:
            return 0.0
        stored = np.stack([vector for vector, _ in self._entries]).astype(np.float64)
        norms = np.linalg.norm(stored, axis=1) * np.linalg.norm(q)
        dots = stored @ q
        cosines = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
        return float(cosines.max())

    @property
    def size(self) -> int:
        """Number of vectors held (expired ones included until the next query)."""
        return len(self._entries)

    def clear(self) -> None:
        """Forget every vector."""
        self._entries.clear()


def _trace_row(trace: Mapping[str, Any]) -> pl.DataFrame:
    from storage.inputs.readers import rows_from_objects
    from transforms.validate import with_rule

    row = with_rule(rows_from_objects([trace], source="<trace>").lazy()).collect()
    if row.height != 1:
        raise ValueError("evaluate_value takes one trace object")
    if row["rule"][0] is not None:
        raise ValueError(f"invalid trace ({row['rule'][0]}): {row['reason'][0]}")
    return row


class ValueScorer:
    """`evaluateValue` with its own cache: scores one trace at a time, remembering earlier ones."""

    def __init__(
        self, settings: ScoringFile | None = None, embedder: Embedder | None = None
    ) -> None:
        self.settings = settings or ScoringFile()
        enabled = self.settings.embedding.enabled
        self._embedder = (
            embedder
            if embedder is not None
            else (SentenceEmbedder(self.settings.embedding) if enabled else None)
        )
        self.cache = VectorCache(
            max_elements=self.settings.novelty.max_elements,
            dimensions=384,
            ttl=self.settings.novelty.ttl_seconds,
        )
        self._lock = threading.Lock()

    def _novelty(self, text: str) -> float:
        if self._embedder is None:
            return EMPTY_CACHE_NOVELTY
        vector = self._embedder.encode([text])[0]
        if self.cache.dimensions != vector.shape[0] and self.cache.size == 0:
            self.cache = VectorCache(self.cache.max_elements, int(vector.shape[0]), self.cache.ttl)
        if self.cache.size == 0:
            novelty = EMPTY_CACHE_NOVELTY
        else:
            novelty = min(1.0, max(0.0, 1.0 - self.cache.max_cosine_similarity(vector)))
        self.cache.add(vector)
        return novelty

    def evaluate(self, trace: Mapping[str, Any]) -> float:
        """The value score in [0, 1] of one ReasoningTrace (SDK JSON shape)."""
        row = _trace_row(trace)
        with self._lock:
            novelty = self._novelty(row.select(trace_text())["text"][0])
        scored = value_score(
            value_features(row.lazy(), self.settings.scoring.all_profiles()).with_columns(
                novelty=pl.lit(novelty)
            ),
            self.settings.scoring.share_threshold,
        ).collect()
        return float(scored["score"][0])


_default: ValueScorer | None = None


def evaluate_value(trace: Mapping[str, Any]) -> float:
    """Score one trace like the SDK's `evaluateValue`, with a process-wide cache.

    The embedder loads on the first call; later calls compare against the traces scored
    before in this process. Without sentence-transformers, N is 0.5.
    """
    global _default
    if _default is None:
        _default = ValueScorer()
    return _default.evaluate(trace)
