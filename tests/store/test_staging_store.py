"""A run's staging (storage/store/staging_store.py): one Parquet file per input file, read through a
view that leaves out settled rows; an unfinished file is never read, a discarded one leaves
nothing, and a file rejected after some of its batches stages none of its rows."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import query_rows, run_pipeline

from storage.store.duckdb_store import DuckDBStore
from storage.store.staging_store import (
    StagedFile,
    create_staging,
    delete_staged,
    drop_staging,
    limit_staged,
    staged_count_by_file,
    staged_rows,
)

SCHEMA = pl.Schema(
    {
        "trace_id": pl.String(),
        "source_file": pl.String(),
        "row_number": pl.Int64(),
        "created_at": pl.Datetime("us", "UTC"),
        "_order": pl.Int64(),
    }
)


def rows(file: str, numbers: range, base: int) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "trace_id": [f"kp:trace:{file}-{n}" for n in numbers],
            "source_file": file,
            "row_number": list(numbers),
            "created_at": [datetime(2026, 1, 1 + n % 3, tzinfo=UTC) for n in numbers],
            "_order": [base + n for n in numbers],
        },
        schema=SCHEMA,
    )


def ids(store: DuckDBStore) -> list[str]:
    return staged_rows(store, "r", ["trace_id"])["trace_id"].to_list()


def test_rows_are_read_once_their_file_is_complete_and_settled_rows_are_left_out(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "staged"
    with DuckDBStore(tmp_path / "db.duckdb") as store:
        create_staging(store, "r", SCHEMA, folder)
        assert ids(store) == []
        first = StagedFile(folder, 0, SCHEMA)
        first.append(rows("a", range(0, 3), 0))
        first.append(rows("a", range(3, 5), 0).select(reversed(SCHEMA.names())))  # any order
        assert ids(store) == []  # not complete yet
        first.close()
        second = StagedFile(folder, 1, SCHEMA)
        second.append(rows("b", range(0, 4), 1 << 40))
        second.discard()  # rejected after a batch
        assert not list(folder.glob("*staged-000002*"))
        assert ids(store) == [f"kp:trace:a-{n}" for n in range(5)]
        assert pq.ParquetFile(first.path).num_row_groups == 2

        delete_staged(store, "r", pl.DataFrame({"source_file": ["a"], "row_number": [1]}))
        outside = limit_staged(
            store, "r", datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 3, tzinfo=UTC)
        )
        assert outside.rows() == [("a", 1)]  # row 2 is on 2026-01-03
        assert ids(store) == ["kp:trace:a-0", "kp:trace:a-3", "kp:trace:a-4"]
        assert staged_count_by_file(store, "r").rows() == [("a", 3)]
        drop_staging(store, "r")
        tables = store.scratch.sql(
            "SELECT table_name FROM duckdb_tables() WHERE table_name IN ('staged_r', 'dropped_r') "
            "UNION ALL SELECT view_name FROM duckdb_views() WHERE view_name = 'staged_r'"
        )
        assert tables.is_empty()


def test_a_file_rejected_after_some_batches_stages_none_of_its_rows(
    tmp_path: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second row group of bad.parquet holds text that is not UTF-8: the file is
    quarantined whole after its first batches were staged, and good.parquet still loads."""
    from pipelines import staging
    from transforms.synth.traces import synthetic_traces

    traces = synthetic_traces(12, seed=3)
    traces.slice(6).write_parquet(tmp_path / "good.parquet")
    first = traces.slice(0, 6).to_arrow()
    with pq.ParquetWriter(tmp_path / "bad.parquet", first.schema) as writer:
        writer.write_table(first)
        text = first.schema.field("id").type
        binary = pa.large_binary() if text == pa.large_string() else pa.binary()
        bad_ids = pa.array([b"kp:\xff", b"kp:\xfe"], binary).view(text)
        broken = first.slice(0, 2).set_column(first.schema.get_field_index("id"), "id", bad_ids)
        writer.write_table(broken)
    monkeypatch.setattr(staging, "DEFAULT_BATCH_ROWS", 3)
    counts = run_pipeline([tmp_path], db_path, embed=False)
    assert counts["files_quarantined"] == 1 and counts["rows_valid"] == 6
    stored = query_rows(db_path, "SELECT DISTINCT source_file FROM traces")
    assert [Path(file).name for (file,) in stored] == ["good.parquet"]
    ((rule,),) = query_rows(db_path, "SELECT rule FROM quarantine WHERE file LIKE '%bad.parquet'")
    assert rule == "unreadable_file"


def test_a_failed_write_on_the_writer_thread_is_raised_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Row groups are written on the file's own thread: a write that fails there (here the
    third batch: a full disk, say) is raised by a later `append` or by `close`, and the file
    is not named for the staging view."""
    folder = tmp_path / "staged"
    folder.mkdir()
    written = 0
    real_write = pq.ParquetWriter.write_table

    def failing_write(self: pq.ParquetWriter, table: pa.Table, *args: object) -> None:
        nonlocal written
        written += 1
        if written == 3:
            raise OSError("No space left on device")
        real_write(self, table, *args)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", failing_write)
    staged = StagedFile(folder, 0, SCHEMA)
    with pytest.raises(OSError, match="No space left"):
        for batch in range(10):
            staged.append(rows("a", range(batch * 3, batch * 3 + 3), 0))
        staged.close()
    staged.discard()
    assert not list(folder.iterdir())
    assert written == 3  # nothing was written after the failure was seen


def test_close_waits_for_every_batch_handed_to_the_writer(tmp_path: Path) -> None:
    folder = tmp_path / "staged"
    folder.mkdir()
    staged = StagedFile(folder, 0, SCHEMA)
    for batch in range(20):
        staged.append(rows("a", range(batch * 50, batch * 50 + 50), 0))
    staged.close()
    table = pq.read_table(staged.path)
    assert table.num_rows == 1000
    assert pq.ParquetFile(staged.path).num_row_groups == 20
    assert table.column("row_number").to_pylist() == list(range(1000))
