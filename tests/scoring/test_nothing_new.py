"""A rerun with nothing to do (pipelines/score.py): when the ledger holds every input file with
its content and every stored level is current, `score_traces` records no run and changes no
table; whenever a run would do something (a level to compute, a crash's work to clear,
`force`, a changed file), the run happens as before."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import query_rows, table_snapshot

from pipelines.score import score_traces
from tracegrade.demo import write_demo_archive


@pytest.fixture()
def scored(tmp_path: Path) -> tuple[Path, Path]:
    """A small archive, scored once: (archive, database)."""
    archive = tmp_path / "archive"
    write_demo_archive(archive, n_traces=60, days=2, seed=11)
    db = tmp_path / "scores.duckdb"
    first = score_traces([str(archive)], db=str(db), no_embedder=True)
    assert first.run_id and first.counts["rows_scored"] > 0
    return archive, db


def runs(db: Path) -> int:
    ((count,),) = query_rows(db, "SELECT count(*) FROM runs")
    return int(count)


def test_a_rerun_with_nothing_new_records_no_run_and_changes_nothing(
    scored: tuple[Path, Path],
) -> None:
    archive, db = scored
    files = sum(path.is_file() for path in archive.rglob("*"))
    before = table_snapshot(db, exclude=())
    again = score_traces([str(archive)], db=str(db), no_embedder=True)
    assert again.run_id == ""
    assert again.markdown.startswith("# tracegrade: nothing new")
    assert f"Every one of the {files:,} input files" in again.markdown
    assert again.counts == {
        "files_read": 0,
        "files_skipped": files,
        "rows_read": 0,
        "rows_scored": 0,
    }
    assert not again.nothing_scored  # the command exits 0
    assert table_snapshot(db, exclude=()) == before


def test_levels_of_another_configuration_make_a_run(
    scored: tuple[Path, Path], tmp_path: Path
) -> None:
    archive, db = scored
    config = tmp_path / "confidence.toml"
    config.write_text('[confidence]\naggregation = "min"\n')
    again = score_traces(
        [str(archive)], db=str(db), no_embedder=True, confidence_config=str(config)
    )
    ((traces,),) = query_rows(db, "SELECT count(*) FROM traces")
    assert again.run_id and runs(db) == 2
    assert again.counts["files_skipped"] > 0 and again.counts["confidence_traces"] == traces


def test_a_crashed_runs_work_folder_makes_a_run_that_clears_it(
    scored: tuple[Path, Path],
) -> None:
    archive, db = scored
    leftover = db.parent / f".{db.name}.work" / "0123456789abcdef0123456789abcdef"
    leftover.mkdir(parents=True)
    (leftover / "valid.parquet").write_bytes(b"half")
    again = score_traces([str(archive)], db=str(db), no_embedder=True)
    assert again.run_id and runs(db) == 2
    assert not leftover.exists()


def test_force_and_a_changed_file_make_a_run(scored: tuple[Path, Path]) -> None:
    archive, db = scored
    forced = score_traces([str(archive)], db=str(db), no_embedder=True, force=True)
    assert forced.run_id and forced.counts["files_read"] > 0
    first = sorted(archive.rglob("*.jsonl"))[0]
    first.write_text(first.read_text().splitlines(keepends=True)[0])
    changed = score_traces([str(archive)], db=str(db), no_embedder=True)
    assert changed.run_id and changed.counts["files_read"] == 1
    assert runs(db) == 3
