"""Novelty replay (SPEC 3.2 and 3.3): the SDK's vector cache replayed in event time, vectorized.

Rows arrive sorted by (scope, created_at, id). The cache that trace i sees holds the traces of
its scope at positions [lo_i, i), where lo_i is the latest of: the scope's first row, i minus
the capacity, and (with a TTL) the first row younger than ttl at i's time. A block of
consecutive targets shares one matrix product against the union of their windows; a band mask
keeps each row to its own window.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

__all__ = [
    "EMPTY_CACHE_NOVELTY",
    "NoveltyResult",
    "normalized",
    "novelty_partitions",
    "replay_novelty",
    "window_bounds",
]

EMPTY_CACHE_NOVELTY = 0.5
"""N for a trace whose cache is empty, and for every trace without an embedder (SDK rule)."""

_DEFAULT_BLOCK_ROWS = 128


@dataclass(frozen=True)
class NoveltyResult:
    """N per row (NaN where the row was not a target) and the size of the cache it saw."""

    novelty: npt.NDArray[np.float64]
    window: npt.NDArray[np.int64]


def normalized(vectors: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Rows scaled to unit length in float32 (zero rows stay zero: cosine 0 with anything)."""
    array = np.asarray(vectors, dtype=np.float32)
    norms = np.sqrt(np.einsum("ij,ij->i", array, array))
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return array * scale[:, None]


def window_bounds(
    scope_codes: npt.NDArray[np.integer],
    event_us: npt.NDArray[np.int64],
    *,
    max_elements: int,
    ttl_us: int | None,
) -> npt.NDArray[np.int64]:
    """First row of each row's cache window; the window is [lo, i).

    `scope_codes` and `event_us` must be sorted by scope, then by event time.
    """
    n = len(scope_codes)
    index = np.arange(n, dtype=np.int64)
    if n == 0:
        return index
    starts = np.flatnonzero(np.r_[True, scope_codes[1:] != scope_codes[:-1]])
    lengths = np.diff(np.r_[starts, n])
    scope_start = np.repeat(starts, lengths).astype(np.int64)
    lo = np.maximum(scope_start, index - max_elements)
    if ttl_us is not None:
        ttl_lo = np.empty(n, dtype=np.int64)
        for start, length in zip(starts, lengths, strict=True):
            times = event_us[start : start + length]
            # alive while created_at(x) - created_at(entry) < ttl, i.e. entry time > t - ttl
            ttl_lo[start : start + length] = start + np.searchsorted(times, times - ttl_us, "right")
        lo = np.maximum(lo, ttl_lo)
    return lo


def novelty_partitions(
    window_start: npt.ArrayLike, targets: npt.ArrayLike, rows: int
) -> list[tuple[int, int, int]]:
    """Independent pieces of a replay: (halo, first, end) per piece, covering every target.

    A piece computes the targets in [first, end) from the rows [halo, end), where halo is the
    window start of its first target (windows never start earlier later on). Pieces hold at
    most `rows` targets; a piece is cut where a window starts afresh (a scope's first trace, or
    a TTL gap) when that leaves it at least half full, so small scopes share a piece and
    large ones are cut into blocks.
    """
    lo = np.asarray(window_start, dtype=np.int64)
    target_rows = np.flatnonzero(np.asarray(targets, dtype=bool))
    fresh_window = np.flatnonzero(lo == np.arange(len(lo)))
    segment = np.searchsorted(fresh_window, target_rows, side="right")
    pieces: list[tuple[int, int, int]] = []
    start, count = 0, len(target_rows)
    while start < count:
        end = min(start + rows, count)
        if end < count and segment[end] == segment[end - 1]:
            segment_start = int(np.searchsorted(segment, segment[end - 1], side="left"))
            if segment_start - start >= max(rows // 2, 1):
                end = segment_start
        first, last = int(target_rows[start]), int(target_rows[end - 1])
        pieces.append((int(lo[first]), first, last + 1))
        start = end
    return pieces


def _blocks(targets: npt.NDArray[np.int64], lo: npt.NDArray[np.int64], size: int) -> list[slice]:
    """Cut the targets into runs whose windows overlap, then into pieces of at most `size`."""
    if len(targets) == 0:
        return []
    new_run = np.r_[True, lo[targets[1:]] >= targets[:-1]]
    run_start = np.maximum.accumulate(np.where(new_run, np.arange(len(targets)), 0))
    cut = new_run | ((np.arange(len(targets)) - run_start) % size == 0)
    edges = np.r_[np.flatnonzero(cut), len(targets)]
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True)]


def _mask_outside(
    sims: npt.NDArray[np.float32],
    cols: npt.NDArray[np.int64],
    lo: npt.NDArray[np.int64],
    hi: npt.NDArray[np.int64],
) -> None:
    """Set the entries outside each row's window [lo, hi) to -inf, in place."""
    outside = (cols[None, :] < lo[:, None]) | (cols[None, :] >= hi[:, None])
    np.putmask(sims, outside, np.float32(-np.inf))


def _block_best(
    unit: npt.NDArray[np.float32], rows: npt.NDArray[np.int64], lo: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Row of the most similar window entry [lo_k, rows_k) of each target row."""
    first, last = int(lo[0]), int(rows[-1])
    if last <= first:
        return np.zeros(len(rows), dtype=np.int64)
    contiguous = int(rows[-1]) - int(rows[0]) == len(rows) - 1
    queries = unit[int(rows[0]) : int(rows[-1]) + 1] if contiguous else unit[rows]
    sims = queries @ unit[first:last].T
    cols = np.arange(first, last, dtype=np.int64)
    # Columns [lo of the last row, the first row) lie in every row's window: only the two
    # edges need a mask (all of it when the block's windows share no column).
    a, b = int(lo[-1]) - first, int(rows[0]) - first
    if a >= b:
        _mask_outside(sims, cols, lo, rows)
    else:
        if a > 0:
            _mask_outside(sims[:, :a], cols[:a], lo, rows)
        if b < sims.shape[1]:
            _mask_outside(sims[:, b:], cols[b:], lo, rows)
    return first + sims.argmax(axis=1)


def _pair_cosines(
    unit: npt.NDArray[np.float32], rows: npt.NDArray[np.int64], cols: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    """Cosine of each (row, col) pair of unit vectors, summed in float64 from the pair alone.

    The matrix product only picks the most similar entry: its float32 value depends on how
    the block was cut, so the value is recomputed from the two vectors. N then does not
    depend on which traces were scored together, and a nightly slice equals a backfill.
    """
    return np.einsum("ij,ij->i", unit[rows], unit[cols], dtype=np.float64)


def _worker_count(threads: int | None, blocks: int) -> int:
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(threads or available or 1, blocks))


def replay_novelty(
    embeddings: npt.ArrayLike,
    window_start: npt.ArrayLike,
    *,
    targets: npt.ArrayLike | None = None,
    block_rows: int = _DEFAULT_BLOCK_ROWS,
    threads: int | None = None,
) -> NoveltyResult:
    """Replay the SDK's cache over rows sorted by (scope, created_at, id).

    Args:
        embeddings: one vector per row; rows that only fill caches still need theirs.
        window_start: first row of each row's cache (see `window_bounds`); the cache of row i
            is rows [window_start[i], i).
        targets: boolean mask of the rows whose N is wanted (default: all).
        block_rows: targets per matrix product.
        threads: blocks computed side by side, each with single-threaded BLAS (default: the
            CPUs this process may use). The result does not depend on it.

    Returns:
        N = clamp(1 - max cosine, 0, 1), 0.5 for an empty cache, NaN for non-targets; and the
        number of cache entries each target saw (0 for non-targets).
    """
    unit = normalized(embeddings)
    lo = np.asarray(window_start, dtype=np.int64)
    n = len(lo)
    if unit.shape[0] != n:
        raise ValueError(f"embeddings has {unit.shape[0]} rows but window_start has {n}")
    index = np.arange(n, dtype=np.int64)
    if np.any(lo > index) or np.any(lo < 0) or np.any(np.diff(lo) < 0):
        raise ValueError("window_start must be non-decreasing with 0 <= window_start[i] <= i")
    wanted = np.ones(n, dtype=bool) if targets is None else np.asarray(targets, dtype=bool)
    target_rows = np.flatnonzero(wanted).astype(np.int64)
    best = np.full(n, np.nan, dtype=np.float64)

    def solve(piece: slice) -> None:
        rows = target_rows[piece]
        nearest = _block_best(unit, rows, lo[rows])
        seen = lo[rows] < rows
        best[rows[seen]] = _pair_cosines(unit, rows[seen], nearest[seen])

    pieces = _blocks(target_rows, lo, block_rows)
    workers = _worker_count(threads, len(pieces))
    if workers == 1:
        for piece in pieces:
            solve(piece)
    else:
        # Single-threaded BLAS calls side by side keep the cores busier than one multi-threaded
        # BLAS call on these small products (block_rows x dim x ~max_elements).
        with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(workers) as pool:
            for _ in pool.map(solve, pieces):
                pass
    window = np.where(wanted, index - lo, 0)
    novelty = np.where(window > 0, np.clip(1.0 - best, 0.0, 1.0), EMPTY_CACHE_NOVELTY)
    return NoveltyResult(novelty=np.where(wanted, novelty, np.nan), window=window)
