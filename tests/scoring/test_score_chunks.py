"""The score stage works through the plan a chunk at a time (bounded memory); the scores it
stores do not depend on the chunk size."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import query_rows

from tracegrade.cli import main
from tracegrade.cli.exits import EXIT_OK
from tracegrade.demo import write_demo_archive


def test_scores_in_chunks_equal_one_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipelines import stages

    archive = tmp_path / "archive"
    write_demo_archive(archive, n_traces=150, days=2, seed=3)
    stored = {}
    for chunk in (1_000_000, 11):
        monkeypatch.setattr(stages, "SCORE_CHUNK_TRACES", chunk)
        db = tmp_path / f"chunk{chunk}.duckdb"
        assert main(["score", str(archive), "--db", str(db), "--no-embedder"]) == EXIT_OK
        stored[chunk] = query_rows(
            db,
            "SELECT trace_id, score, complexity, tool_diversity, outcome_confidence, overrides, "
            "shareable FROM latest_scores ORDER BY trace_id",
        )
        assert not list((tmp_path / f"chunk{chunk}.duckdb.work").rglob("scores-*.parquet"))
    assert len(stored[11]) > 11 * 3
    assert stored[11] == stored[1_000_000]
