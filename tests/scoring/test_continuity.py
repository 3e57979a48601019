"""Nightly slices equal one backfill; late, changed and re-delivered files (SPEC 3.4, issue 3)."""

from __future__ import annotations

import random
import shutil
import uuid
from pathlib import Path

import duckdb
import polars as pl
import pytest
from conftest import latest_scores, run_pipeline, table_snapshot
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from transforms.synth.traces import synthetic_traces

N_TRACES = 300


@pytest.fixture(scope="module")
def traces() -> pl.DataFrame:
    """300 synthetic traces over 6 days with short texts, in (created_at, id) order."""
    frame = synthetic_traces(N_TRACES, seed=11, days=6).with_columns(pl.col("steps").list.head(2))
    return frame.sort(pl.col("metadata").struct.field("created_at"), "id")


@pytest.fixture(scope="module")
def cache_db(traces: pl.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database whose embeddings table holds every text of `traces` (embedded once)."""
    folder = tmp_path_factory.mktemp("cache")
    traces.write_parquet(folder / "all.parquet")
    db = folder / "cache.duckdb"
    run_pipeline([folder / "all.parquet"], db)
    con = duckdb.connect(str(db))
    for table in ("trace_rows", "score_rows", "quarantine", "files", "runs"):
        con.execute(f"DELETE FROM {table}")
    con.close()
    return db


def fresh_db(cache_db: Path, folder: Path, name: str) -> Path:
    db = folder / name
    shutil.copy(cache_db, db)
    return db


def write_config(folder: Path, **novelty: object) -> Path:
    lines = ["[novelty]"]
    for key, value in novelty.items():
        if value is not None:
            lines.append(f"{key} = {value!r}".replace("'", '"'))
    path = folder / "tracegrade.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


@example(seed=802, k=4, scope="agent", max_elements=7, ttl=7200)
@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(2, 5),
    scope=st.sampled_from(["agent", "global"]),
    max_elements=st.sampled_from([7, 1000]),
    ttl=st.sampled_from([None, 7200]),
)
def test_nightly_slices_equal_one_backfill(
    traces: pl.DataFrame,
    cache_db: Path,
    tmp_path: Path,
    seed: int,
    k: int,
    scope: str,
    max_elements: int,
    ttl: int | None,
) -> None:
    rng = random.Random(seed)
    folder = tmp_path / uuid.uuid4().hex
    folder.mkdir()
    config = write_config(folder, scope=scope, max_elements=max_elements, ttl_seconds=ttl)
    # k nightly slices in time order ...
    cuts = sorted(rng.sample(range(1, N_TRACES), k - 1))
    slices = [traces.slice(a, b - a) for a, b in zip([0, *cuts], [*cuts, N_TRACES], strict=True)]
    # ... a few traces arriving in a later night's file ...
    for index in range(k - 1):
        late = rng.sample(range(slices[index].height), min(3, slices[index].height - 1))
        moved = slices[index].with_row_index("_i").filter(pl.col("_i").is_in(late)).drop("_i")
        slices[index] = slices[index].with_row_index("_i").filter(~pl.col("_i").is_in(late))
        slices[index] = slices[index].drop("_i")
        slices[index + 1] = pl.concat([moved, slices[index + 1]])
    # ... and one earlier slice delivered last (a late file), the rest maybe swapped too.
    order = list(range(k))
    order.append(order.pop(rng.randrange(k - 1)))
    if k > 2 and rng.random() < 0.5:
        i = rng.randrange(k - 2)
        order[i], order[i + 1] = order[i + 1], order[i]
    files = []
    for index, part in enumerate(slices):
        path = folder / f"night-{index:02d}.parquet"
        part.write_parquet(path)
        files.append(path)

    nightly = fresh_db(cache_db, folder, "nightly.duckdb")
    runs = []
    for index in order:
        counts = run_pipeline([files[index]], nightly, config)
        assert counts["texts_embedded"] == 0
        runs.append((index, counts))
    backfill = fresh_db(cache_db, folder, "backfill.duckdb")
    counts = run_pipeline(files, backfill, config)
    assert counts["rows_new"] == N_TRACES and counts["rows_rescored"] == 0

    expected, got = latest_scores(backfill), latest_scores(nightly)
    assert got.height == N_TRACES
    assert_frame_equal(got, expected, check_exact=True)
    # the slice delivered after later ones re-scored some of them
    late_runs = []
    for position, (index, counts) in enumerate(runs):
        if any(earlier > index for earlier, _ in runs[:position]):
            late_runs.append(counts)
    assert late_runs and any(c["rows_late"] > 0 for c in late_runs)
    if ttl is None:
        # with a TTL a late trace may find no stored trace of its scope inside its window
        # (seed=802, k=4, agent, 7, 7200 rescored nothing, correctly), so only without one
        # must some stored trace have been re-scored
        assert any(c["rows_rescored"] > 0 for c in late_runs)


def test_same_name_new_content_is_read_again_and_identical_file_is_skipped(
    traces: pl.DataFrame, cache_db: Path, tmp_path: Path
) -> None:
    day = tmp_path / "day.parquet"
    part = traces.head(40)
    part.write_parquet(day)
    db = fresh_db(cache_db, tmp_path, "scores.duckdb")
    first = run_pipeline([day], db)
    assert first["files_read"] == 1 and first["rows_new"] == 40

    before = table_snapshot(db)
    again = run_pipeline([day], db)
    assert again["files_read"] == 0 and again["files_skipped"] == 1
    assert again["rows_new"] == again["rows_changed"] == again["rows_rescored"] == 0
    assert table_snapshot(db) == before

    changed_id = part["id"][10]
    edited = part.with_columns(
        pl.when(pl.col("id") == changed_id)
        .then(pl.col("outcome").struct.with_fields(pl.field("confidence") * 0.5))
        .otherwise(pl.col("outcome"))
        .alias("outcome")
    )
    edited.write_parquet(day)
    counts = run_pipeline([day], db)
    assert counts["files_read"] == 1 and counts["files_skipped"] == 0
    assert counts["rows_changed"] == 1 and counts["rows_unchanged"] == 39
    assert counts["rows_new"] == 0
    con = duckdb.connect(str(db), read_only=True)
    try:
        (n_traces,) = con.execute("SELECT count(*) FROM traces").fetchone()
        (n_latest,) = con.execute("SELECT count(*) FROM latest_scores").fetchone()
        (hashes,) = con.execute(
            "SELECT count(DISTINCT content_hash) FROM files WHERE path = ?", [str(day)]
        ).fetchone()
    finally:
        con.close()
    assert n_traces == n_latest == 40
    assert hashes == 2  # the ledger has both versions of the file
    # the repaired database equals scoring the edited file from scratch
    clean = fresh_db(cache_db, tmp_path, "clean.duckdb")
    run_pipeline([day], clean)
    assert_frame_equal(latest_scores(db), latest_scores(clean), check_exact=True)


@pytest.mark.parametrize("position", [20, 57])
def test_changed_trace_rescores_exactly_the_later_traces_in_its_window(
    traces: pl.DataFrame, cache_db: Path, tmp_path: Path, position: int
) -> None:
    max_elements = 5
    config = write_config(tmp_path, scope="global", max_elements=max_elements)
    part = traces.head(60)
    day = tmp_path / "day.parquet"
    part.write_parquet(day)
    db = fresh_db(cache_db, tmp_path, "scores.duckdb")
    run_pipeline([day], db, config)

    changed_id = part["id"][position]
    edited = part.with_columns(
        pl.when(pl.col("id") == changed_id)
        .then(pl.col("outcome").struct.with_fields(pl.field("confidence") * 0.5))
        .otherwise(pl.col("outcome"))
        .alias("outcome")
    )
    edited.write_parquet(tmp_path / "resubmitted.parquet")
    counts = run_pipeline([tmp_path / "resubmitted.parquet"], db, config)
    assert counts["rows_changed"] == 1
    assert counts["rows_rescored"] == min(max_elements, part.height - 1 - position)

    clean = fresh_db(cache_db, tmp_path, "clean.duckdb")
    run_pipeline([tmp_path / "resubmitted.parquet"], clean, config)
    assert_frame_equal(latest_scores(db), latest_scores(clean), check_exact=True)
