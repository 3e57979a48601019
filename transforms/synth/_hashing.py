"""Counter-based randomness of the trace generator: hashes instead of a random stream.

A value drawn from a hash of a trace's content key (and a salt naming the draw) is the same
whichever trace, chunk or batch it is computed in, so repeated traces repeat their texts and
steps without any state passing between rows.
"""

from __future__ import annotations

import zlib

import numpy as np

__all__ = ["GOLDEN", "mix", "salt", "unit"]

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
"""The SplitMix64 increment (2**64 / golden ratio), also used to spread step positions."""


def mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finalizer: a well-mixed uint64 hash of each element."""
    x = x + GOLDEN
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def salt(name: str) -> np.uint64:
    """A uint64 constant for the draw `name`, XORed into a hash so each draw differs."""
    return np.uint64((zlib.crc32(name.encode()) * 0x100000001B3) % (1 << 64))


def unit(h: np.ndarray) -> np.ndarray:
    """Uniform floats in [0, 1) from uint64 hashes."""
    return (h >> np.uint64(11)).astype(np.float64) * 2.0**-53
