"""Novelty replay given embeddings: the vectorized band replay against a one-at-a-time oracle.

Embeddings: 384-d float32 unit vectors with cluster structure (topics that persist for a
while, near-repeats and exact repeats), in event-time order. Cache: max_elements 1000, no TTL.
Two cases: one global scope, and six agent scopes (Zipf-like traffic).

    tracegrade: transforms.novelty.window_bounds + replay_novelty (blocks of 128 targets,
                one matrix product each, band mask at the edges, a
                thread per CPU with single-threaded BLAS)
    baseline:   the SDK's cache in numpy, one trace at a time: one matrix-vector product
                against a rolling array of the scope's last 1000 vectors,
                N = clamp(1 - max, 0, 1), 0.5 when the cache is empty

Also measured in the same run: this machine's float32 matmul peak (best of 5 4096x4096 sgemm),
to say how much of it the replay's useful work (2 * dim * window per trace) reaches.

Run: .venv/bin/python bench/bench_novelty.py [--n 100000]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from _common import (
    Check,
    Comparison,
    begin,
    bench_args,
    end,
    print_table,
    save_result,
    timed,
)

from transforms.novelty import EMPTY_CACHE_NOVELTY, replay_novelty, window_bounds

DIM = 384
MAX_ELEMENTS = 1000
TARGET_RATIO = 3.0
TARGET_PEAK_SHARE = 0.5
TARGET_DIFF = 1e-6
AGENTS = 6


def clustered_unit_vectors(n: int, seed: int) -> npt.NDArray[np.float32]:
    """Unit vectors in topics that persist for a while; 5% exact repeats of a recent vector."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((256, DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    switch = rng.random(n) < 0.3
    topic = np.maximum.accumulate(np.where(switch, np.arange(n), 0))
    topic = rng.integers(0, len(centres), n)[topic]
    spread = rng.uniform(0.3, 1.2, n).astype(np.float32)[:, None]
    noise = rng.standard_normal((n, DIM), dtype=np.float32) / np.float32(np.sqrt(DIM))
    vectors = centres[topic] + spread * noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    repeat = np.flatnonzero(rng.random(n) < 0.05)
    repeat = repeat[repeat >= 50]
    vectors[repeat] = vectors[repeat - rng.integers(1, 50, len(repeat))]
    return vectors.astype(np.float32)


def agent_scopes(n: int, seed: int) -> npt.NDArray[np.int64]:
    """An agent per trace, Zipf-like over six agents."""
    rng = np.random.default_rng(seed + 1)
    weights = 1.0 / np.arange(1, AGENTS + 1) ** 0.7
    return rng.choice(AGENTS, size=n, p=weights / weights.sum()).astype(np.int64)


def vectorized(
    vectors: npt.NDArray[np.float32], codes: npt.NDArray[np.int64], times: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """N and window size per row; rows sorted by (scope, time) as the pipeline sorts them."""
    lo = window_bounds(codes, times, max_elements=MAX_ELEMENTS, ttl_us=None)
    result = replay_novelty(vectors, lo)
    return result.novelty, result.window


def oracle(
    vectors: npt.NDArray[np.float32], codes: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    """The SDK's cache, one trace at a time in event order, one rolling array per scope."""
    n = len(vectors)
    novelty = np.empty(n, dtype=np.float64)
    caches: dict[int, npt.NDArray[np.float32]] = {}
    filled: dict[int, int] = {}
    position: dict[int, int] = {}
    for i in range(n):
        scope = int(codes[i])
        cache = caches.get(scope)
        if cache is None:
            cache = caches[scope] = np.empty((MAX_ELEMENTS, DIM), dtype=np.float32)
            filled[scope] = position[scope] = 0
        size = filled[scope]
        x = vectors[i]
        if size == 0:
            novelty[i] = EMPTY_CACHE_NOVELTY
        else:
            best = float((cache[:size] @ x).max())
            novelty[i] = min(max(1.0 - best, 0.0), 1.0)
        cache[position[scope]] = x
        position[scope] = (position[scope] + 1) % MAX_ELEMENTS
        filled[scope] = min(size + 1, MAX_ELEMENTS)
    return novelty


def sgemm_peak(size: int = 4096, repetitions: int = 5) -> float:
    """GFLOP/s of the best of `repetitions` float32 size x size matrix products."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    out = np.empty((size, size), dtype=np.float32)
    np.matmul(a, b, out=out)
    best = timed(lambda: np.matmul(a, b, out=out), repetitions=repetitions, long_s=1e9).seconds
    return 2.0 * size**3 / best / 1e9


def run_case(name: str, vectors: npt.NDArray[np.float32], codes: npt.NDArray[np.int64],
             peak: float) -> tuple[list[Check], dict[str, Any]]:
    """Time both sides on one scope layout; the report lines and the figures."""
    n = len(vectors)
    times = np.arange(n, dtype=np.int64) * 1_000_000
    # The pipeline sorts rows by (scope, created_at, id); the oracle walks event time.
    order = np.lexsort((times, codes))
    sorted_vectors = np.ascontiguousarray(vectors[order])
    sorted_codes, sorted_times = codes[order], times[order]

    ours = timed(lambda: vectorized(sorted_vectors, sorted_codes, sorted_times))
    base = timed(lambda: oracle(vectors, codes))
    novelty_sorted, window_sorted = ours.result
    novelty = np.empty(n)
    novelty[order] = novelty_sorted
    window = np.empty(n, dtype=np.int64)
    window[order] = window_sorted
    diff = float(np.abs(novelty - base.result).max())

    flops = 2.0 * DIM * float(window.sum())
    compared = Comparison(n, ours, base)
    ours_gflops, base_gflops = flops / ours.seconds / 1e9, flops / base.seconds / 1e9
    share = ours_gflops / peak
    print(f"[{name}] {n:,} traces, mean window {window.mean():.0f}, useful work "
          f"{flops / 1e9:.1f} GFLOP; tracegrade {ours.how} "
          f"({', '.join(f'{s:.2f}' for s in ours.all_seconds)} s), baseline {base.how} "
          f"({', '.join(f'{s:.2f}' for s in base.all_seconds)} s)")
    checks = [
        compared.throughput_check("traces", TARGET_RATIO, prefix=f"[{name}] "),
        Check(f"[{name}] useful GFLOP/s", f"{ours_gflops:.1f}", f"{base_gflops:.1f}",
              f"{ours_gflops / base_gflops:.1f}x", "", None),
        Check(f"[{name}] useful / sgemm peak", f"{share:.2f}", f"{base_gflops / peak:.2f}", "",
              f">= {TARGET_PEAK_SHARE}", share >= TARGET_PEAK_SHARE),
        Check(f"[{name}] max |N diff|", f"{diff:.2e}", "", "", f"<= {TARGET_DIFF:.0e}",
              diff <= TARGET_DIFF),
    ]
    figures = {
        **compared.figures(), "mean_window": float(window.mean()), "useful_gflop": flops / 1e9,
        "vectorized_gflops": ours_gflops, "baseline_gflops": base_gflops,
        "useful_over_peak": share, "max_abs_diff": diff,
    }
    return checks, figures


def main() -> None:
    args = bench_args(__doc__.splitlines()[0], n_default=100_000, unit="traces")

    info, load = begin("bench_novelty: novelty replay, vectorized vs one-at-a-time oracle", args)
    try:
        from threadpoolctl import threadpool_info

        blas = [f"{p['internal_api']} {p['version']} ({p['num_threads']} threads)"
                for p in threadpool_info() if p["user_api"] == "blas"]
        print(f"BLAS: {', '.join(blas)}")
    except ImportError:
        pass
    peak = sgemm_peak()
    print(f"float32 matmul peak (best of 5, 4096x4096 sgemm): {peak:.1f} GFLOP/s\n")

    vectors = clustered_unit_vectors(args.n, args.seed)
    checks: list[Check] = []
    figures: dict[str, Any] = {"machine": info, "sgemm_peak_gflops": peak}
    for name, codes in (("global", np.zeros(args.n, dtype=np.int64)),
                        (f"{AGENTS} agents", agent_scopes(args.n, args.seed))):
        case_checks, figures[name] = run_case(name, vectors, codes, peak)
        checks += case_checks
    print()
    print_table(checks)
    end(info, load)
    save_result("bench_novelty", figures)


if __name__ == "__main__":
    main()
