"""A run's spans cut over files, as exporters cut them, score as one trace.

Langfuse's blob storage export writes each observation into the file of the time window it
starts in, so a run that crosses a window's end (every hour with hourly exports) is split over
two files; the Collector's file exporter rotates files the same way. Before, `score` mapped
each file on its own: the earlier part of such a run was quarantined `duplicate_id` and the
later part scored with only its own steps. The span files of one run are now read together.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import query_rows
from test_langfuse_exports import DATA, EXPECTED, _blob_row

from storage.spans import otel_readers
from tracegrade.cli import main

TRACES = (
    "SELECT trace_id, content_hash, objective, result_summary, len(steps), "
    "list_transform(steps, s -> s.tool_name) FROM traces ORDER BY trace_id"
)


def _rows() -> list[dict[str, Any]]:
    """The downloads' observations as the blob export's rows, in their start order."""
    rows = [
        _blob_row(observation)
        for path in sorted(DATA.glob("*.trace.json"))
        for observation in json.loads(path.read_text())["observations"]
    ]
    return sorted(rows, key=lambda row: (row["trace_id"], row["start_time"] or ""))


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)


def _windows(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each trace cut where an export window would end mid-run: its earlier half of
    observations (by start) in one window, the rest in the next."""
    earlier: list[dict[str, Any]] = []
    later: list[dict[str, Any]] = []
    for trace in dict.fromkeys(row["trace_id"] for row in rows):
        own = [row for row in rows if row["trace_id"] == trace]
        earlier += own[: len(own) // 2 or 1]
        later += own[len(own) // 2 or 1 :]
    return earlier, later


@pytest.mark.parametrize(("suffix", "spilled"), [(".jsonl.gz", False), (".jsonl", True)])
def test_a_run_cut_over_two_export_windows_scores_as_the_whole_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str, spilled: bool
) -> None:
    """As the export writes them (gzip) and not; `spilled`: the spans parked on disk under
    the run's work folder, as past 64 MiB."""
    if spilled:
        monkeypatch.setattr(otel_readers, "SPOOL_BYTES", 1)
    rows = _rows()
    whole = tmp_path / "whole" / "observations.jsonl.gz"
    _write(whole, rows)
    db_whole = tmp_path / "whole.duckdb"
    assert main(["score", str(whole), "--db", str(db_whole), "--no-embedder"]) == 0

    earlier, later = _windows(rows)
    assert later and all(row["parent_observation_id"] for row in later)  # no run starts there
    folder = tmp_path / "a-project" / "observations"
    _write(folder / f"2026-12-07T00-00-00{suffix}", earlier)
    _write(folder / f"2026-12-07T01-00-00{suffix}", later)
    db = tmp_path / "split.duckdb"
    assert main(["score", str(tmp_path / "a-project"), "--db", str(db), "--no-embedder"]) == 0

    expected = query_rows(db_whole, TRACES)
    assert len(expected) == len(EXPECTED)
    assert query_rows(db, TRACES) == expected  # every step of every run, the same content hash
    assert query_rows(db, "SELECT rule, count(*) FROM quarantine GROUP BY ALL") == []
    # the later window's spans all belong to runs whose root is in the earlier one: it is
    # loaded with no row of its own, not quarantined as holding no record
    files = query_rows(
        db, "SELECT regexp_extract(path, 'T0(.)', 1), status, rows_read FROM files ORDER BY 1"
    )
    assert files == [("0", "loaded", len(EXPECTED)), ("1", "loaded", 0)]
    assert main(["score", str(tmp_path / "a-project"), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT count(*) FROM files") == [(2,)]  # a rerun reads nothing again


def test_a_file_that_cannot_be_read_is_quarantined_and_the_others_still_join(
    tmp_path: Path,
) -> None:
    earlier, later = _windows(_rows())
    folder = tmp_path / "a-project" / "observations"
    _write(folder / "2026-12-07T00-00-00.jsonl.gz", earlier)
    _write(folder / "2026-12-07T01-00-00.jsonl.gz", later)
    cut = folder / "2026-12-07T02-00-00.jsonl.gz"
    _write(cut, later)
    cut.write_bytes(cut.read_bytes()[:200])  # an upload cut off
    db = tmp_path / "split.duckdb"
    main(["score", str(tmp_path / "a-project"), "--db", str(db), "--no-embedder"])
    assert query_rows(db, "SELECT rule, count(*) FROM quarantine GROUP BY ALL") == [
        ("unreadable_file", 1)
    ]
    steps = query_rows(db, "SELECT sum(len(steps)), count(*) FROM traces")
    whole = tmp_path / "whole.jsonl.gz"
    _write(whole, earlier + later)
    db_whole = tmp_path / "whole.duckdb"
    assert main(["score", str(whole), "--db", str(db_whole), "--no-embedder"]) == 0
    assert steps == query_rows(db_whole, "SELECT sum(len(steps)), count(*) FROM traces")


def test_past_the_spool_s_size_files_are_read_in_consecutive_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Span files are read together up to `JOINED_BYTES` (the mapping's memory grows with the
    spool's buckets past it); beyond, each run of files on its own, as before: with room for
    one file at a time, the cut runs come back as two parts, the earlier quarantined."""
    monkeypatch.setattr(otel_readers, "JOINED_BYTES", 1)
    earlier, later = _windows(_rows())
    folder = tmp_path / "a-project" / "observations"
    _write(folder / "2026-12-07T00-00-00.jsonl.gz", earlier)
    _write(folder / "2026-12-07T01-00-00.jsonl.gz", later)
    db = tmp_path / "split.duckdb"
    assert main(["score", str(tmp_path / "a-project"), "--db", str(db), "--no-embedder"]) == 0
    rules = dict(query_rows(db, "SELECT rule, count(*) FROM quarantine GROUP BY ALL"))
    assert rules.get("duplicate_id", 0) > 0


def test_a_trace_exported_again_is_scored_from_the_later_file(tmp_path: Path) -> None:
    """A window exported twice (the second time after the runs' observations were updated):
    each span is taken from the later file, and the earlier file's copy of each trace is
    quarantined `duplicate_id`, as when each file was mapped alone."""
    rows = _rows()
    again = [dict(row) for row in rows]
    for row in again:
        if row["type"] == "TOOL" and row["output"]:
            row["output"] = "updated: " + row["output"]
    folder = tmp_path / "a-project" / "observations"
    _write(folder / "2026-12-07T00-00-00.jsonl", rows)
    _write(folder / "2026-12-07T00-00-01.jsonl", again)  # later in the files' order
    db = tmp_path / "twice.duckdb"
    assert main(["score", str(tmp_path / "a-project"), "--db", str(db), "--no-embedder"]) == 0
    traces = query_rows(db, "SELECT count(*) FROM traces")[0][0]
    assert traces == len(EXPECTED)
    quarantined = query_rows(
        db, "SELECT file LIKE '%T00-00-00.jsonl', rule, count(*) FROM quarantine GROUP BY ALL"
    )
    assert quarantined == [(True, "duplicate_id", traces)]  # all in the earlier file
    alone = tmp_path / "alone.duckdb"
    assert (
        main(
            [
                "score",
                str(folder / "2026-12-07T00-00-01.jsonl"),
                "--db",
                str(alone),
                "--no-embedder",
            ]
        )
        == 0
    )
    assert query_rows(db, TRACES) == query_rows(alone, TRACES)  # the updated outputs
    first = tmp_path / "first.duckdb"
    assert (
        main(
            [
                "score",
                str(folder / "2026-12-07T00-00-00.jsonl"),
                "--db",
                str(first),
                "--no-embedder",
            ]
        )
        == 0
    )
    assert query_rows(db, TRACES) != query_rows(first, TRACES)
