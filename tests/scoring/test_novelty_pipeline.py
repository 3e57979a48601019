"""Novelty through the whole pipeline with the real embedder equals the one-at-a-time oracle."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from conftest import oracle, run_pipeline

from transforms.synth.traces import synthetic_traces

N_TRACES = 500
MAX_ELEMENTS = 100
"""The replay's capacity: under a tenth of the traces, so that both scopes evict (the texts
of 2,000 traces took 47 s to embed on a slow machine; the window's code is the same)."""


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """500 synthetic traces with short texts (two steps at most), one Parquet export."""
    folder = tmp_path_factory.mktemp("archive")
    traces = synthetic_traces(N_TRACES, seed=42).with_columns(pl.col("steps").list.head(2))
    traces.write_parquet(folder / "traces.parquet")
    return folder / "traces.parquet"


@pytest.fixture(scope="module")
def embedded_db(archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A database whose embeddings table holds every text of the archive (embedded once)."""
    db = tmp_path_factory.mktemp("embedded") / "cache.duckdb"
    run_pipeline([archive], db)
    con = duckdb.connect(str(db))
    for table in ("trace_rows", "score_rows", "quarantine", "files", "runs"):
        con.execute(f"DELETE FROM {table}")
    con.close()
    yield db


def write_config(folder: Path, scope: str, ttl: int | None) -> Path:
    path = folder / "tracegrade.toml"
    ttl_line = "" if ttl is None else f"ttl_seconds = {ttl}\n"
    path.write_text(f'[novelty]\nscope = "{scope}"\nmax_elements = {MAX_ELEMENTS}\n{ttl_line}')
    return path


@pytest.mark.parametrize("scope", ["agent", "global"])
@pytest.mark.parametrize("ttl", [None, 3600])
def test_pipeline_novelty_equals_the_oracle(
    archive: Path, embedded_db: Path, tmp_path: Path, scope: str, ttl: int | None
) -> None:
    db = tmp_path / "scores.duckdb"
    shutil.copy(embedded_db, db)
    counts = run_pipeline([archive], db, write_config(tmp_path, scope, ttl))
    assert counts["texts_embedded"] == 0  # every vector came from the store
    con = duckdb.connect(str(db), read_only=True)
    rows = con.sql(
        "SELECT s.trace_id, s.created_at, s.agent_id, s.novelty, s.novelty_window, e.vector "
        "FROM latest_scores s JOIN traces t USING (trace_id) "
        "JOIN embeddings e ON e.embedding_key = sha256(e.model || chr(0) || t.text_sha) "
        "ORDER BY s.created_at, s.trace_id"
    ).pl()
    con.close()
    assert rows.height == N_TRACES
    scopes = ["global"] * rows.height if scope == "global" else rows["agent_id"].to_list()
    expected, sizes = oracle(
        np.stack(rows["vector"].to_numpy()).astype(np.float32),
        scopes,
        rows["created_at"].dt.epoch("us").to_list(),
        max_elements=MAX_ELEMENTS,
        ttl_us=None if ttl is None else ttl * 1_000_000,
    )
    assert np.abs(rows["novelty"].to_numpy() - np.array(expected)).max() <= 1e-6
    assert rows["novelty_window"].to_list() == sizes
    if ttl is None:
        assert max(sizes) == MAX_ELEMENTS  # the window filled and evicted in either scope
    assert rows["novelty"].std() > 0.05


def test_another_process_opens_the_database_while_texts_are_encoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Encoding needs no database: a reader in another process gets in while the model works
    (the run holds the file only to read what it needs and to store each chunk)."""
    import subprocess
    import sys

    from pipelines.embedder import SentenceEmbedder

    db = tmp_path / "scores.duckdb"
    traces = synthetic_traces(40, seed=9).with_columns(pl.col("steps").list.head(1))
    traces.write_parquet(tmp_path / "traces.parquet")
    opened: list[int] = []
    encode = SentenceEmbedder.encode_counted

    def encode_beside_a_reader(
        self: SentenceEmbedder, texts: list[str], progress: object = None
    ) -> object:
        reader = f"import duckdb; duckdb.connect({str(db)!r}, read_only=True).close()"
        opened.append(subprocess.run([sys.executable, "-c", reader], timeout=60).returncode)
        return encode(self, texts, progress)  # type: ignore[arg-type]

    monkeypatch.setattr(SentenceEmbedder, "encode_counted", encode_beside_a_reader)
    counts = run_pipeline([tmp_path / "traces.parquet"], db)
    assert counts["texts_embedded"] > 30
    assert opened and opened == [0] * len(opened)
