"""What novelty and source agreement need from an embedding model.

The model itself (sentence-transformers, loaded lazily) is run machinery: `pipelines.embedder`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

__all__ = ["Embedder"]


class Embedder(Protocol):
    """What the pipeline needs from an embedding model."""

    @property
    def model_key(self) -> str:
        """Identity of the vectors (model, precision, length); part of every embedding key."""
        ...

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """L2-normalized float32 vectors, one row per text."""
        ...
