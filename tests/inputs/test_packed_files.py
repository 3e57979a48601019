"""Compressed exports read as the files they hold (`storage.inputs.packed`): real files of
tests/data gzip- and Zstandard-compressed score exactly as the files themselves, named as the
compressed file, and a rerun skips them as it skips any file it has read."""

from __future__ import annotations

import gzip
import hashlib
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
REAL = (
    DATA / "claude-code" / "tool_heavy.jsonl",  # a session transcript, one event a line
    DATA / "langfuse" / "google-adk-2025-08-28.trace.json",  # a Langfuse download
    DATA / "openllmetry" / "traceloop-sdk-0.62.4.jsonl",  # OTLP JSON lines
)
TRACES = (
    "SELECT trace_id, content_hash, objective, result_summary, agent_id, steps, source_file "
    "FROM traces ORDER BY trace_id"
)


def _compressed(data: bytes, codec: str) -> bytes:
    if codec == "gzip":
        return gzip.compress(data)
    return pa.compress(data, codec="zstd", asbytes=True)


@pytest.mark.parametrize(("codec", "suffix"), [("gzip", ".gz"), ("zstd", ".zst")])
def test_compressed_files_score_as_the_files_they_hold(
    tmp_path: Path, codec: str, suffix: str
) -> None:
    plain, packed = tmp_path / "plain", tmp_path / "packed"
    plain.mkdir()
    for source in REAL:
        (plain / source.parent.name).mkdir()
        shutil.copy(source, plain / source.parent.name / source.name)
        (packed / source.parent.name).mkdir(parents=True)
        compressed = packed / source.parent.name / (source.name + suffix)
        compressed.write_bytes(_compressed(source.read_bytes(), codec))

    for folder in (plain, packed):
        assert main(["score", str(folder), "--db", str(tmp_path / f"{folder.name}.duckdb")]) == 0
    expected = query_rows(tmp_path / "plain.duckdb", TRACES)
    found = query_rows(tmp_path / "packed.duckdb", TRACES)
    assert len(found) == len(expected) >= len(REAL)
    for was, now in zip(expected, found, strict=True):
        assert now[:-1] == was[:-1]  # ids, content hashes, texts and steps alike
        assert now[-1] == was[-1].replace(str(plain), str(packed)) + suffix

    ledger = query_rows(tmp_path / "packed.duckdb", "SELECT path, status, content_hash FROM files")
    assert {(Path(path).name, status) for path, status, _ in ledger} == {
        (source.name + suffix, "loaded") for source in REAL
    }
    for path, _, digest in ledger:
        assert digest == hashlib.sha256(Path(path).read_bytes()).hexdigest()
    runs = "SELECT count(*) FROM runs"
    before = query_rows(tmp_path / "packed.duckdb", runs)
    assert main(["score", str(packed), "--db", str(tmp_path / "packed.duckdb")]) == 0
    assert query_rows(tmp_path / "packed.duckdb", runs) == before  # nothing new: no run
    assert not list(tmp_path.glob(".*.work/**/*.json*"))  # nothing unpacked is left


def test_a_compressed_file_that_holds_no_trace_says_what_it_holds(tmp_path: Path) -> None:
    export = tmp_path / "spans.json.gz"
    export.write_bytes(gzip.compress(b'[{"name": "a", "context": {}}]'))
    db = tmp_path / "t.duckdb"
    assert main(["score", str(export), "--db", str(db)]) == 1
    ((status, reason),) = query_rows(db, "SELECT status, reason FROM files")
    assert status == "quarantined"
    assert "a JSON array of 1 objects with keys name, context" in reason, reason
    assert "read unpacked from its gzip data" in reason
    assert ".work" not in reason and "unpacked-" not in reason  # the file named, not its copy


def test_import_says_to_give_a_compressed_file_to_score(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = tmp_path / "spans.jsonl.gz"
    export.write_bytes(gzip.compress((DATA / "openllmetry" / REAL[2].name).read_bytes()))
    assert main(["import", "otel", str(export), "--out", str(tmp_path / "o.parquet")]) == 2
    said = capsys.readouterr().err
    assert "reads no compressed file" in said and "tracegrade score" in said, said
