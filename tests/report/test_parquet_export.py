"""The date-partitioned Parquet copy of the scores stays equal to the latest_scores view."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
from conftest import run_pipeline
from polars.testing import assert_frame_equal

from storage.report.parquet_export import export_scores
from storage.store.duckdb_store import DuckDBStore
from transforms.synth.traces import synthetic_traces


def view(db: Path) -> pl.DataFrame:
    con = duckdb.connect(str(db), read_only=True)
    con.execute("SET TimeZone = 'UTC'")
    try:
        return con.sql("SELECT * FROM latest_scores ORDER BY trace_id").pl()
    finally:
        con.close()


def exported(folder: Path) -> pl.DataFrame:
    return pl.read_parquet(folder / "**" / "*.parquet", hive_partitioning=False).sort("trace_id")


def export(db: Path, folder: Path) -> list[str]:
    with DuckDBStore(db) as store:
        return [day.isoformat() for day in export_scores(store, folder)]


def test_partitions_follow_new_changed_and_moved_traces(tmp_path: Path) -> None:
    traces = synthetic_traces(120, seed=3, days=4)
    traces.write_parquet(tmp_path / "day1.parquet")
    db, folder = tmp_path / "scores.duckdb", tmp_path / "warehouse"
    run_pipeline([tmp_path / "day1.parquet"], db, embed=False)

    days = export(db, folder)
    assert len(days) == 4
    assert sorted(p.name for p in folder.iterdir()) == [f"date={day}" for day in days]
    assert_frame_equal(exported(folder), view(db))
    for day in days:
        part = pl.read_parquet(folder / f"date={day}" / "scores.parquet")
        assert part["created_at"].dt.date().cast(pl.String).unique().to_list() == [day]

    assert export(db, folder) == []  # nothing scored since: nothing rewritten

    first = traces.row(0, named=True)
    old_day = first["metadata"]["created_at"].date()
    moved = first | {
        "metadata": first["metadata"] | {"created_at": datetime(2027, 3, 1, 12, tzinfo=UTC)},
        "outcome": first["outcome"] | {"confidence": 0.01},
    }
    pl.DataFrame([moved], schema=traces.schema).write_parquet(tmp_path / "day2.parquet")
    run_pipeline([tmp_path / "day2.parquet"], db, embed=False)

    assert export(db, folder) == [old_day.isoformat(), "2027-03-01"]
    assert_frame_equal(exported(folder), view(db))
    assert (folder / "date=2027-03-01" / "scores.parquet").exists()
    assert not list(folder.rglob("*.partial"))


def test_a_date_left_without_traces_loses_its_partition(tmp_path: Path) -> None:
    traces = synthetic_traces(1, seed=4, days=1)
    traces.write_parquet(tmp_path / "one.parquet")
    db, folder = tmp_path / "scores.duckdb", tmp_path / "warehouse"
    run_pipeline([tmp_path / "one.parquet"], db, embed=False)
    (old_day,) = export(db, folder)

    row = traces.row(0, named=True)
    later = row["metadata"]["created_at"] + timedelta(days=3)
    row["metadata"] = row["metadata"] | {"created_at": later}
    pl.DataFrame([row], schema=traces.schema).write_parquet(tmp_path / "moved.parquet")
    run_pipeline([tmp_path / "moved.parquet"], db, embed=False)

    assert export(db, folder) == [old_day, later.date().isoformat()]
    assert not (folder / f"date={old_day}").exists()
    assert_frame_equal(exported(folder), view(db))
