"""A run's spans cut between two nightly runs score as the whole run.

An export window that ends mid-run (Langfuse's blob storage export puts each observation in
the window it starts in) leaves a run's first part in one night's files and the rest in the
next night's. Before, the second night's part replaced the first: the stored trace lost the
steps of the first night. A run now keeps the spans of the traces that may go on
(`storage.spans.open_spans`), and the next run maps each of them again with its later spans.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from conftest import query_rows
from test_langfuse_exports import EXPECTED
from test_split_span_files import TRACES, _rows, _windows, _write

from tracegrade.cli import main

_FORMAT = "%Y-%m-%d %H:%M:%S.%f"


def _at(text: str | None, shift: timedelta) -> str | None:
    if text is None:
        return None
    return (datetime.strptime(text, _FORMAT) + shift).strftime(_FORMAT)[:23]


def _nightly(rows: list[dict[str, Any]], start: datetime) -> list[dict[str, Any]]:
    """The downloads' runs moved to the last minutes before midnight, one a second: what a
    fleet's busy evening looks like to the export (they were recorded months apart)."""
    firsts: dict[str, datetime] = {}
    for row in rows:
        begun = datetime.strptime(row["start_time"], _FORMAT)
        firsts[row["trace_id"]] = min(firsts.get(row["trace_id"], begun), begun)
    places = {trace: index for index, trace in enumerate(sorted(firsts))}
    moved = []
    for row in rows:
        shift = start + timedelta(seconds=places[row["trace_id"]]) - firsts[row["trace_id"]]
        moved.append(
            {
                **row,
                "start_time": _at(row["start_time"], shift),
                "end_time": _at(row["end_time"], shift),
            }
        )
    return moved


EVENING = datetime(2026, 12, 6, 23, 59, 40)


def _two_nights(folder: Path, suffix: str = ".jsonl") -> tuple[Path, Path, list[dict[str, Any]]]:
    """The downloads' runs on a busy evening, each cut where the night's export window ends:
    the first night's file, the next night's, and all the rows."""
    rows = _nightly(_rows(), EVENING)
    earlier, later = _windows(rows)
    first, second = folder / f"2026-12-06{suffix}", folder / f"2026-12-07{suffix}"
    _write(first, earlier)
    _write(second, later)
    return first, second, rows


def _score(path: Path, db: Path, *flags: str) -> int:
    return main(["score", str(path), "--db", str(db), "--no-embedder", *flags])


def _whole(tmp_path: Path, rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The traces of all `rows` scored in one run, as one file."""
    whole = tmp_path / "whole.jsonl"
    _write(whole, rows)
    db_whole = tmp_path / "whole.duckdb"
    assert _score(whole, db_whole) == 0
    return query_rows(db_whole, TRACES)


def _kept(db: Path) -> list[tuple[Any, ...]]:
    return query_rows(db, "SELECT trace_hex, count(*) FROM open_spans GROUP BY 1 ORDER BY 1")


def test_a_run_cut_between_two_nightly_runs_is_stored_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    night = tmp_path / "a-project" / "observations"
    first_night, next_night, rows = _two_nights(night, ".jsonl.gz")
    whole = tmp_path / "whole" / "observations.jsonl.gz"
    _write(whole, rows)
    db_whole = tmp_path / "whole.duckdb"
    assert _score(whole, db_whole) == 0
    assert query_rows(db_whole, "SELECT count(*) FROM open_spans") == [(len(rows),)]

    db = tmp_path / "nightly.duckdb"
    capsys.readouterr()
    assert _score(first_night, db) == 0  # the first night: the first parts
    first = query_rows(db, TRACES)
    assert len(_kept(db)) == len(EXPECTED)  # every run may go on: each is kept
    said = capsys.readouterr().out
    assert (
        f"| traces whose spans are kept: they may go on in the next run's files | {len(EXPECTED)} |"
        in said
    )
    assert "joined with the spans" not in said
    assert _score(next_night, db) == 0  # the next night: the rest
    said = capsys.readouterr().out
    assert (
        f"| traces joined with the spans an earlier run kept (its files began them) | {len(EXPECTED)} |"
        in said
    )

    expected = query_rows(db_whole, TRACES)
    assert len(expected) == len(EXPECTED)
    assert first != expected
    assert query_rows(db, TRACES) == expected  # every step of every run, the same content hash
    assert _kept(db) == _kept(db_whole)  # each trace's spans kept once, all of them
    # the first parts that held no step were quarantined by the first night (its history)
    quarantined = query_rows(db, "SELECT DISTINCT file LIKE '%12-06%', rule FROM quarantine")
    assert quarantined in ([], [(True, "empty_trajectory")])
    stored = {trace for trace, *_ in query_rows(db, TRACES)}
    assert {trace for (trace,) in query_rows(db, "SELECT trace_id FROM quarantine")} <= stored
    files = query_rows(db, "SELECT status, rows_read FROM files ORDER BY path")
    assert files == [("loaded", len(EXPECTED)), ("loaded", len(EXPECTED))]
    assert _score(tmp_path / "a-project", db) == 0  # a rerun reads nothing again
    assert query_rows(db, "SELECT count(*) FROM files") == [(2,)]


def test_only_traces_near_the_newest_span_are_kept_and_let_go_days_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The downloads as recorded, months apart: only the newest run lies within the default
    hour of the newest span, so only its spans are kept and only it comes back whole. They
    are let go `open_trace_days` after the run that kept them, not by another run's spans."""
    from storage.spans import open_spans

    rows = _rows()
    earlier, later = _windows(rows)
    night = tmp_path / "a-project" / "observations"
    _write(night / "1.jsonl", earlier)
    _write(night / "2.jsonl", later)
    db = tmp_path / "nightly.duckdb"
    assert _score(night / "1.jsonl", db) == 0
    newest = max(rows, key=lambda row: row["start_time"])["trace_id"]
    kept = _kept(db)
    assert len(kept) == 1
    assert kept[0][1] == sum(row["trace_id"] == newest for row in earlier)
    assert _score(night / "2.jsonl", db) == 0

    whole = tmp_path / "whole.jsonl"
    _write(whole, rows)
    db_whole = tmp_path / "whole.duckdb"
    assert _score(whole, db_whole) == 0
    stored = {row[0]: row for row in query_rows(db, TRACES)}
    expected = {row[0]: row for row in query_rows(db_whole, TRACES)}
    same = [trace for trace in expected if stored.get(trace) == expected[trace]]
    assert len(same) == 1  # the newest run whole; the others only their later parts
    assert kept[0][1] + sum(row["trace_id"] == newest for row in later) == _kept(db)[0][1]

    # another export's file of later spans lets nothing go: its files say nothing of these
    # (one observation that scores alone: the Claude Agent SDK's run's first)
    other = tmp_path / "another-export.jsonl"
    claude = [row for row in rows if row["trace_id"] == "097f1d8982fa909b8cffb14a166ec272"]
    _write(other, _nightly(claude[:1], datetime(2026, 12, 8, 0, 0, 0)))
    assert _score(other, db) == 0
    assert kept[0][0] in [hex_id for hex_id, _ in _kept(db)]
    # open_trace_days (3) after the run that kept them, the spans are let go
    later_on = datetime.now(UTC) + timedelta(days=3, hours=1)
    monkeypatch.setattr(open_spans, "_now", lambda: later_on)
    _write(other, _nightly(claude[:1], datetime(2026, 12, 9, 0, 0, 0)))
    assert _score(other, db) == 0
    assert kept[0][0] not in [hex_id for hex_id, _ in _kept(db)]


def test_no_span_is_kept_with_no_window(tmp_path: Path) -> None:
    config = tmp_path / "otel.toml"
    config.write_text("open_trace_minutes = 0\n")
    first_night, next_night, _ = _two_nights(tmp_path / "observations")
    db = tmp_path / "nightly.duckdb"
    assert _score(first_night, db) == 0
    assert _kept(db) != []  # kept by default
    assert _score(next_night, db, "--otel-config", str(config)) == 0
    assert _kept(db) == []  # with no window, what was kept is let go
    stored = query_rows(db, TRACES)
    alone = tmp_path / "alone.duckdb"
    assert _score(next_night, alone, "--otel-config", str(config)) == 0
    assert stored == query_rows(alone, TRACES)  # the later parts alone, as before


@pytest.mark.parametrize("stop_at", ["before the publication", "in the publication"])
def test_a_failed_run_keeps_nothing_and_lets_nothing_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop_at: str
) -> None:
    """The kept spans change only with the run's publication: a run that fails before it, or
    in it, leaves them as they were, and the next run still joins the trace whole."""
    import storage.store.publishing as publishing

    first_night, next_night, rows = _two_nights(tmp_path / "observations")
    db = tmp_path / "nightly.duckdb"
    assert _score(first_night, db) == 0
    kept = _kept(db)

    real = publishing.merge

    def failing(con: duckdb.DuckDBPyConnection, tables: dict[str, Path]) -> None:
        if stop_at == "in the publication":
            real(con, tables)
        raise OSError("the disk is gone")

    monkeypatch.setattr(publishing, "merge", failing)
    with pytest.raises(OSError, match="the disk is gone"):
        _score(next_night, db)
    assert _kept(db) == kept
    monkeypatch.undo()
    assert _score(next_night, db) == 0
    assert query_rows(db, TRACES) == _whole(tmp_path, rows)


def test_kept_spans_are_json_of_the_facts(tmp_path: Path) -> None:
    """Kept as JSON, so a version whose span facts differ still reads them (a fact it lacks
    is null)."""
    rows = _nightly(_rows(), EVENING)
    path = tmp_path / "1.jsonl"
    _write(path, rows)
    db = tmp_path / "a.duckdb"
    assert _score(path, db) == 0
    spans = [json.loads(text) for (text,) in query_rows(db, "SELECT span FROM open_spans")]
    assert {span["trace_hex"] for span in spans} == {hex_id for hex_id, _ in _kept(db)}
    assert all(span["start_ns"] > 0 and "kind" in span for span in spans)


def test_on_a_ducklake_two_nights_equal_one_backfill_of_both(tmp_path: Path) -> None:
    """The promise the kept spans serve: the same traces whether scored nightly or in one
    backfill, on a DuckLake as on a file."""
    from pipelines.backfill import backfill
    from pipelines.score import score_traces
    from storage.store.duckdb_store import DuckDBStore

    night = tmp_path / "observations"
    _two_nights(night, ".jsonl.gz")
    lake = f"ducklake:sqlite:{tmp_path / 'lake' / 'meta.sqlite'}"
    for path in sorted(night.iterdir()):
        score_traces([str(path)], db=lake, no_embedder=True)
    one_file = tmp_path / "backfill.duckdb"
    start = datetime(2026, 12, 6, tzinfo=UTC)
    backfill(
        [str(night)], start=start, end=start + timedelta(days=2), db=str(one_file), no_embedder=True
    )

    def stored(db: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        with DuckDBStore(db, read_only=True) as store:
            traces = store.sql(TRACES).rows()
            scores = store.sql(
                "SELECT trace_id, score, n_steps, complexity, tool_diversity FROM latest_scores "
                "ORDER BY trace_id"
            ).rows()
            return traces, scores

    nightly, backfilled = stored(lake), stored(str(one_file))
    assert len(nightly[0]) == len(EXPECTED)
    assert nightly == backfilled


def test_spans_a_collector_wrote_as_they_ended_cut_between_two_runs(tmp_path: Path) -> None:
    """The Collector's file exporter writes each span when it ends, so the first night holds a
    run's model and tool calls without the agent's span that ends last (Google ADK's own
    OTLP capture, tests/data/google-adk: three runs, the middle one cut after its tools)."""
    document = json.loads((Path(__file__).parents[1] / "data/google-adk/otlp.json").read_text())

    def request(spans: list[dict[str, Any]]) -> str:
        resource = document["resourceSpans"][0]
        scope = resource["scopeSpans"][0]
        line = {"resource": resource.get("resource", {}), "scopeSpans": [{**scope, "spans": spans}]}
        return json.dumps({"resourceSpans": [line]}) + "\n"

    spans = sorted(
        (
            span
            for part in document["resourceSpans"]
            for s in part["scopeSpans"]
            for span in s["spans"]
        ),
        key=lambda span: int(span["endTimeUnixNano"]),
    )
    cut = next(i for i, span in enumerate(spans) if span["name"] == "execute_tool (merged)") + 1
    night = tmp_path / "collector"
    night.mkdir()
    (night / "traces-1.json").write_text(request(spans[:cut]))
    (night / "traces-2.json").write_text(request(spans[cut:]))
    whole = tmp_path / "whole.json"
    whole.write_text(request(spans))
    db_whole, db = tmp_path / "whole.duckdb", tmp_path / "nightly.duckdb"
    assert _score(whole, db_whole) == 0
    assert _score(night / "traces-1.json", db) == 0
    assert _score(night / "traces-2.json", db) == 0
    expected = query_rows(db_whole, TRACES)
    assert len(expected) == 3
    assert query_rows(db, TRACES) == expected


def test_kept_spans_join_traces_in_every_run_of_files_read_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past `JOINED_BYTES` a run reads its files in runs of files apart: the kept spans are
    looked up for each, so a trace the night before began is joined in whichever file it
    goes on, and each kept span is kept once."""
    from storage.spans import otel_readers

    first_night, _, rows = _two_nights(tmp_path / "observations")
    _, later = _windows(rows)
    traces = sorted({row["trace_id"] for row in later})
    night = tmp_path / "next-night"
    _write(night / "a.jsonl", [row for row in later if row["trace_id"] in traces[:4]])
    _write(night / "b.jsonl", [row for row in later if row["trace_id"] in traces[4:]])
    db = tmp_path / "nightly.duckdb"
    assert _score(first_night, db) == 0
    monkeypatch.setattr(otel_readers, "JOINED_BYTES", 1)  # each file read apart
    assert _score(night, db) == 0
    assert query_rows(db, TRACES) == _whole(tmp_path, rows)
    spans = query_rows(db, "SELECT span->>'span_hex' FROM open_spans")
    assert len(spans) == len(set(spans)) == len(rows)


def test_a_file_that_cannot_be_read_does_not_move_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The newest span start is taken from the files read whole: the spans of a file that
    fails part-way (a byte that is not UTF-8 in its last block; here its spans are a day
    later) are left out, and do not push every trace of the good files out of the window."""
    from storage.spans import otel_files

    monkeypatch.setattr(otel_files, "CHUNK_BYTES", 2048)  # the file in many blocks
    monkeypatch.setattr(otel_files, "JSON_LINES_CHUNK_BYTES", 2048)
    first_night, _, rows = _two_nights(tmp_path / "observations")
    bad = tmp_path / "observations" / "2026-12-08.jsonl"
    _write(bad, _nightly(rows, datetime(2026, 12, 8, 12, 0, 0)))
    bad.write_bytes(bad.read_bytes() + b'{"id": "\xff"}\n')
    db = tmp_path / "nightly.duckdb"
    assert _score(first_night, db) == 0
    _score(tmp_path / "observations", db)
    assert query_rows(db, "SELECT rule FROM quarantine WHERE file LIKE '%12-08%'") == [
        ("unreadable_file",)
    ]
    # the good files' traces are kept again, whole (not only the first night's spans)
    assert sum(spans for _, spans in _kept(db)) == len(rows)
