"""Novelty replay against a plain one-trace-at-a-time replay of the SDK's VectorCache."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from conftest import oracle

from transforms.novelty import replay_novelty, window_bounds
from transforms.replay import plan_replay

HOUR_US = 3_600 * 1_000_000


def archive(n: int, seed: int, agents: int = 4) -> pl.DataFrame:
    """Traces with clustered embeddings (near duplicates and outliers), in no particular order."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(40, 32))
    members = rng.integers(0, 40, n)
    vectors = centers[members] + rng.normal(
        scale=rng.choice([0.01, 0.3, 2.0], n)[:, None], size=(n, 32)
    )
    vectors[rng.random(n) < 0.02] *= -1
    start = 1_767_225_600_000_000
    times = start + rng.integers(0, 20 * HOUR_US, n)
    times[rng.random(n) < 0.1] = start + 5 * HOUR_US
    return pl.DataFrame(
        {
            "trace_id": [f"kp:trace:{i:06d}" for i in rng.permutation(n)],
            "agent": rng.choice([f"agent-{a}" for a in range(agents)], n),
            "created_at": pl.Series(times).cast(pl.Datetime("us", "UTC")),
            "vector": vectors.astype(np.float32),
        }
    )


def replay_vectorized(
    frame: pl.DataFrame, scope: str, max_elements: int, ttl_us: int | None
) -> pl.DataFrame:
    ordered = frame.with_columns(
        scope_key=pl.lit("global") if scope == "global" else pl.col("agent")
    ).sort(["scope_key", "created_at", "trace_id"])
    lo = window_bounds(
        ordered["scope_key"].rle_id().to_numpy(),
        ordered["created_at"].dt.epoch("us").to_numpy(),
        max_elements=max_elements,
        ttl_us=ttl_us,
    )
    result = replay_novelty(np.stack(ordered["vector"].to_numpy()), lo, block_rows=64)
    return ordered.with_columns(novelty=pl.Series(result.novelty), window=pl.Series(result.window))


@pytest.mark.parametrize("scope", ["agent", "global"])
@pytest.mark.parametrize("ttl_us", [None, HOUR_US])
@pytest.mark.parametrize("max_elements", [1000, 37])
def test_replay_equals_the_one_at_a_time_oracle(
    scope: str, ttl_us: int | None, max_elements: int
) -> None:
    frame = archive(2500, seed=11)
    replayed = replay_vectorized(frame, scope, max_elements, ttl_us)
    in_time_order = replayed.sort(["created_at", "trace_id"])
    expected, sizes = oracle(
        np.stack(in_time_order["vector"].to_numpy()),
        in_time_order["scope_key"].to_list(),
        in_time_order["created_at"].dt.epoch("us").to_list(),
        max_elements=max_elements,
        ttl_us=ttl_us,
    )
    got = in_time_order["novelty"].to_numpy()
    assert np.abs(got - np.array(expected)).max() <= 1e-6
    assert in_time_order["window"].to_list() == sizes
    assert got.min() >= 0.0 and got.max() <= 1.0
    assert len(np.unique(np.round(got, 3))) > 50


def test_empty_cache_gives_one_half_and_window_zero() -> None:
    vectors = np.eye(3, dtype=np.float32)
    result = replay_novelty(vectors, np.array([0, 1, 2]))
    assert result.novelty.tolist() == [0.5, 0.5, 0.5]
    assert result.window.tolist() == [0, 0, 0]


def test_identical_vectors_give_zero_and_opposite_ones_clamp_to_one() -> None:
    v = np.array([[1, 0], [1, 0], [-1, 0]], dtype=np.float32)
    result = replay_novelty(v, np.array([0, 0, 0]))
    assert result.novelty.tolist() == [0.5, 0.0, 1.0]


def test_ttl_boundary_expires_an_entry_exactly_ttl_old() -> None:
    codes = np.zeros(3, dtype=np.int64)
    times = np.array([0, 999, 1000], dtype=np.int64)
    assert window_bounds(codes, times, max_elements=10, ttl_us=1000).tolist() == [0, 0, 1]


def test_capacity_evicts_the_oldest() -> None:
    codes = np.zeros(5, dtype=np.int64)
    assert window_bounds(codes, np.arange(5), max_elements=2, ttl_us=None).tolist() == [
        0,
        0,
        0,
        1,
        2,
    ]


def test_scopes_do_not_see_each_other() -> None:
    codes = np.array([0, 0, 1, 1])
    assert window_bounds(codes, np.arange(4), max_elements=10, ttl_us=None).tolist() == [0, 0, 2, 2]


def test_targets_only_compute_the_rows_asked_for() -> None:
    frame = archive(600, seed=3)
    full = replay_vectorized(frame, "global", 50, None)
    lo = window_bounds(
        np.zeros(600, dtype=np.int64),
        full["created_at"].dt.epoch("us").to_numpy(),
        max_elements=50,
        ttl_us=None,
    )
    mask = np.zeros(600, dtype=bool)
    mask[[0, 5, 6, 7, 300, 599]] = True
    part = replay_novelty(np.stack(full["vector"].to_numpy()), lo, targets=mask)
    assert np.allclose(part.novelty[mask], full["novelty"].to_numpy()[mask], atol=1e-7)
    assert np.isnan(part.novelty[~mask]).all()


@pytest.mark.parametrize("block_rows", [1, 16, 128])
def test_threads_and_block_size_do_not_change_n(block_rows: int) -> None:
    frame = archive(1500, seed=5).sort("created_at", "trace_id")
    vectors = np.stack(frame["vector"].to_numpy())
    codes = frame["agent"].rank("dense").to_numpy().astype(np.int64)
    order = np.lexsort((np.arange(len(codes)), codes))
    lo = window_bounds(
        codes[order],
        frame["created_at"].dt.epoch("us").to_numpy()[order],
        max_elements=40,
        ttl_us=HOUR_US,
    )
    targets = np.random.default_rng(1).random(len(lo)) < 0.6
    one = replay_novelty(vectors[order], lo, targets=targets, block_rows=block_rows, threads=1)
    many = replay_novelty(vectors[order], lo, targets=targets, block_rows=block_rows, threads=3)
    np.testing.assert_array_equal(one.novelty, many.novelty)
    np.testing.assert_array_equal(one.window, many.window)
    assert np.isfinite(one.novelty[targets]).all()


def test_window_start_is_checked() -> None:
    with pytest.raises(ValueError, match="window_start"):
        replay_novelty(np.ones((2, 2), dtype=np.float32), np.array([1, 0]))


def _plan_frame(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select(
        "trace_id",
        pl.col("agent").alias("scope_key"),
        "created_at",
        text_sha=pl.col("trace_id"),
    )


@pytest.mark.parametrize("ttl_us", [None, HOUR_US])
def test_planned_increment_equals_one_full_replay(ttl_us: int | None) -> None:
    """Score half the archive, then the other half (late rows included): same N as all at once."""
    frame = archive(1500, seed=5)
    full = replay_vectorized(frame, "agent", 40, ttl_us).select("trace_id", "novelty")
    first, second = (
        frame.filter(pl.col("created_at").dt.epoch("us") % 2 == 0),
        frame.filter(pl.col("created_at").dt.epoch("us") % 2 == 1),
    )
    plan = plan_replay(_plan_frame(first), _plan_frame(second), max_elements=40, ttl_us=ttl_us)
    vectors = plan.rows.join(
        frame.select("trace_id", "vector"), on="trace_id", maintain_order="left"
    )
    result = replay_novelty(
        np.stack(vectors["vector"].to_numpy()), plan.window_start, targets=plan.targets
    )
    first_scores = replay_vectorized(first, "agent", 40, ttl_us).select("trace_id", "novelty")
    updated = plan.rows.with_columns(novelty=pl.Series(result.novelty)).filter(
        pl.Series(plan.targets)
    )
    merged = first_scores.join(
        updated.select("trace_id", "novelty"),
        on="trace_id",
        how="full",
        coalesce=True,
        suffix="_new",
    ).select("trace_id", novelty=pl.coalesce("novelty_new", "novelty"))
    compared = full.join(merged, on="trace_id", suffix="_incremental")
    assert compared.height == 1500
    assert (compared["novelty"] - compared["novelty_incremental"]).abs().max() <= 1e-6
    # Only traces whose window reaches a second-half trace were re-scored.
    rescored = set(plan.rescored.to_list())
    assert rescored and rescored <= set(first["trace_id"].to_list())


def test_changed_trace_rescores_the_windows_it_left() -> None:
    frame = archive(300, seed=9, agents=1)
    ordered = frame.sort("created_at", "trace_id")
    moved_id = ordered["trace_id"][10]
    moved = ordered.filter(pl.col("trace_id") == moved_id).with_columns(
        pl.col("created_at") + pl.duration(days=2)
    )
    plan = plan_replay(_plan_frame(ordered), _plan_frame(moved), max_elements=5, ttl_us=None)
    rescored = set(plan.rescored.to_list())
    assert set(ordered["trace_id"][11:16].to_list()) <= rescored
    assert ordered["trace_id"][17] not in rescored


@pytest.mark.parametrize("scope", ["global", "agent", "domain", "success"])
def test_scope_key_in_sql_is_the_polars_scope_key(scope: str) -> None:
    """The plan of a run without the embedder keys scopes in DuckDB (its late count compares
    them): the SQL expression gives the same string as the Polars one, null included."""
    import duckdb

    from transforms.replay import scope_key, scope_key_sql

    traces = pl.DataFrame(
        {
            "agent_id": ["a", None, "b=c", ""],
            "task_domain": [None, "math", "law", "math"],
            "success": [True, False, None, True],
        }
    )
    with duckdb.connect() as con:
        con.register("traces", traces)
        in_sql = con.sql(f"SELECT {scope_key_sql(scope)} AS k FROM traces").pl()["k"]
    assert in_sql.to_list() == traces.with_columns(scope_key(scope))["scope_key"].to_list()
