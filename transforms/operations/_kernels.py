"""Numpy kernels on integer keys: ranks within equal keys, counts, one-to-one pairing.

Multiset matching needs the rank of each operation among those with the same key; a stable
sort gives it for every row at once, where a window expression would group row by row.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import polars as pl

__all__ = ["NO_KEY", "count_in", "key_array", "largest", "pair", "rank_within"]

Keys = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

NO_KEY = -1
"""The key of a row that cannot match anything (keys are otherwise non-negative)."""


def key_array(frame: pl.DataFrame, expr: pl.Expr) -> Keys:
    """An int64 key per row of `frame`; rows where `expr` is null get NO_KEY."""
    return frame.select(expr.fill_null(NO_KEY).cast(pl.Int64)).to_series().to_numpy()


def largest(values: pl.Series) -> int:
    """The largest value of an integer column; 0 when it is empty or all null."""
    found = values.max()
    return int(found) if isinstance(found, int) else 0


def rank_within(keys: Keys) -> npt.NDArray[np.int64]:
    """0-based rank of each element among the elements with the same key, in array order."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    positions = np.arange(len(keys), dtype=np.int64)
    starts = np.ones(len(keys), dtype=bool)
    starts[1:] = ordered[1:] != ordered[:-1]
    first = np.maximum.accumulate(np.where(starts, positions, 0))
    ranks = np.empty(len(keys), dtype=np.int64)
    ranks[order] = positions - first
    return ranks


def count_in(keys: Keys, population: Keys) -> npt.NDArray[np.int64]:
    """How many elements of `population` (NO_KEY ignored) equal each key (0 for NO_KEY)."""
    values, counts = np.unique(population[population != NO_KEY], return_counts=True)
    if not len(values):
        return np.zeros(len(keys), dtype=np.int64)
    slot = np.minimum(np.searchsorted(values, keys), len(values) - 1)
    hit = (values[slot] == keys) & (keys != NO_KEY)
    return np.where(hit, counts[slot], 0).astype(np.int64)


def pair(left: Keys, right: Keys) -> tuple[Mask, Mask]:
    """Which elements of each side pair one to one with an element of the other on equal keys.

    Within a key, the first min(left count, right count) elements of each side pair, in array
    order; NO_KEY never pairs.
    """
    left_hit = (left != NO_KEY) & (rank_within(left) < count_in(left, right))
    right_hit = (right != NO_KEY) & (rank_within(right) < count_in(right, left))
    return left_hit, right_hit
