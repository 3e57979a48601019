"""Derived levels in a scoring run's read pass (pipelines/staged_levels.py): computed from the
staged rows while they are in memory, equal to the levels read back from the database, and
no stored trace is read back for them; traces that no run gave a level still get one."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import SEED_TRACE, query_rows, run_pipeline
from polars.testing import assert_frame_equal

from pipelines import confidence_stages
from tracegrade.demo import DEMO_START, write_demo_archive

IDENTITY = ("run_id", "computed_at")


def levels(db: Path) -> dict[str, pl.DataFrame]:
    """Both confidence views, without the columns that name the run, in a fixed order."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return {
            "traces": con.sql("SELECT * FROM confidence_traces").pl().drop(IDENTITY),
            "steps": con.sql("SELECT * FROM confidence_steps").pl().drop(IDENTITY),
        }
    finally:
        con.close()


def assert_same_levels(db: Path, other: Path) -> None:
    for name, frame in levels(db).items():
        keys = ["trace_id", "source"] + (["step_index", "score"] if name == "steps" else [])
        expected = levels(other)[name]
        assert frame.height > 0
        assert_frame_equal(frame.sort(keys), expected.sort(keys), check_row_order=False)


def levels_read_back(db: Path, tmp_path: Path) -> Path:
    """A copy of `db` whose levels are all computed again from the stored traces."""
    from pipelines.confidence import confidence_traces

    copy = tmp_path / "read-back.duckdb"
    shutil.copy(db, copy)
    confidence_traces(db=str(copy), force=True)
    return copy


def counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of stored traces each read-back chunk of derived mode asks for."""
    reads: list[int] = []
    original = confidence_stages.stale_derived_traces

    def counted(store: Any, ids: pl.DataFrame) -> pl.DataFrame:
        reads.append(ids.height)
        return original(store, ids)

    monkeypatch.setattr(confidence_stages, "stale_derived_traces", counted)
    return reads


@pytest.fixture(scope="module")
def mixed_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One JSONL file of demo traces in shuffled time order (so every 10,000-row part of the
    read pass spans every day), with bad rows, a repeated id whose content changed, and the
    same trace twice."""
    folder = tmp_path_factory.mktemp("mixed")
    write_demo_archive(folder / "archive", n_traces=400, days=4, seed=11)
    lines = [
        line
        for path in sorted((folder / "archive").rglob("*.jsonl"))
        for line in path.read_text().splitlines()
        if line.strip()
    ]
    twice = dict(SEED_TRACE, id="kp:trace:twice")
    changed = json.loads(json.dumps(twice))
    changed["steps"][1]["output_summary"] = "Error: the repository is not reachable"
    random.Random(3).shuffle(lines)
    lines[100:100] = [json.dumps(twice), json.dumps(twice)]
    lines.append(json.dumps(changed))  # the last of the id: the one kept
    path = folder / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_run_computes_its_levels_while_reading_and_reads_no_trace_back(
    mixed_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.score import score_traces

    monkeypatch.setattr(confidence_stages, "DERIVED_CHUNK_TRACES", 97)  # many parts
    reads = counting_reads(monkeypatch)
    db = tmp_path / "scores.duckdb"
    summary = score_traces([str(mixed_file)], db=str(db), no_embedder=True)
    assert summary.status == "completed"
    assert reads == []
    ((stored,), (levelled,)) = query_rows(
        db, "SELECT count(*) FROM traces UNION ALL SELECT count(*) FROM confidence_traces"
    )
    assert stored == levelled > 150
    ((penalties,),) = query_rows(
        db, "SELECT penalties FROM confidence_traces WHERE trace_id = 'kp:trace:twice'"
    )
    assert any(p.startswith("tool_failures") for p in penalties)  # the last, changed copy
    assert_same_levels(db, levels_read_back(db, tmp_path))


def test_traces_stored_without_a_level_are_read_back_beside_the_staged_ones(
    mixed_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run stopped after its commit (here: stages without derived confidence) leaves traces
    without a level; the next scoring run reads back those, and only those."""
    from pipelines.score import score_traces

    db = tmp_path / "scores.duckdb"
    first = tmp_path / "first"
    write_demo_archive(first, n_traces=120, days=2, seed=4)
    run_pipeline([first], db, embed=False)
    ((without,),) = query_rows(db, "SELECT count(*) FROM traces")
    reads = counting_reads(monkeypatch)
    score_traces([str(mixed_file)], db=str(db), no_embedder=True)
    assert sum(reads) == without > 0
    ((stored,), (levelled,)) = query_rows(
        db, "SELECT count(*) FROM traces UNION ALL SELECT count(*) FROM confidence_traces"
    )
    assert stored == levelled
    assert_same_levels(db, levels_read_back(db, tmp_path))


def test_backfill_chunks_take_the_levels_their_archive_computed(
    mixed_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each day's chunk takes its rows out of parts that span every day."""
    from datetime import timedelta

    from pipelines.backfill import backfill

    monkeypatch.setattr(confidence_stages, "DERIVED_CHUNK_TRACES", 97)  # parts span every day
    reads = counting_reads(monkeypatch)
    db = tmp_path / "backfill.duckdb"
    start = DEMO_START
    summary = backfill(
        [str(mixed_file)], start=start, end=start + timedelta(days=3), db=str(db), no_embedder=True
    )
    assert summary.status == "completed"
    assert reads == []
    ((chunks, days),) = query_rows(
        db,
        "SELECT (SELECT count(DISTINCT run_id) FROM confidence_traces), "
        "(SELECT count(DISTINCT CAST(created_at AS DATE)) FROM traces)",
    )
    assert chunks == days > 1
    assert_same_levels(db, levels_read_back(db, tmp_path))
