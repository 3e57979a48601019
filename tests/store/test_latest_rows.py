"""`latest_trace_rows`: each published trace's newest row, kept by the publications, equal at
every step to the rows the comparison would join (storage/store/latest_rows.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from conftest import query_rows

from storage.schema.latest import LATEST_TRACE_ROWS, PENDING, latest_rows_select
from storage.store.duckdb_store import DuckDBStore
from storage.store.latest_rows import is_current
from tracegrade.cli import main
from transforms.synth.traces import synthetic_traces, to_json_records

V1, V2 = "agent_id = 'bot-v1'", "agent_id = 'bot-v2'"


def _write(path: Path, records: list[dict[str, object]]) -> str:
    path.write_text("".join(json.dumps(r, default=str) + "\n" for r in records))
    return str(path)


def _records(n: int, seed: int, agent: str) -> list[dict[str, object]]:
    found = []
    for record in to_json_records(synthetic_traces(n, seed=seed)):
        one = json.loads(json.dumps(record, default=str))
        one["metadata"]["agent_id"] = agent
        found.append(one)
    return found


def _kept_and_joined(db: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """The table's rows and the rows its query gives over the stored tables, both sorted."""
    columns = "* EXCLUDE (tags), list_sort(tags) AS tags"
    kept = query_rows(db, f"SELECT {columns} FROM {LATEST_TRACE_ROWS} ORDER BY trace_id")
    joined = query_rows(
        db, f"SELECT {columns} FROM ({latest_rows_select('true')}) ORDER BY trace_id"
    )
    return kept, joined


def _current(db: Path) -> bool:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return is_current(lambda sql: con.execute(sql).fetchall())
    finally:
        con.close()


def test_the_table_is_the_joined_rows_after_every_publication(tmp_path: Path) -> None:
    """New traces, changed ones (a new content hash: the old version's rows superseded), a
    confidence run of its own, and a re-run that changes nothing: after each, the table holds
    one row a stored trace, the very row its query joins, and no run is left pending."""
    db = tmp_path / "s.duckdb"
    first = _records(120, 3, "bot-v1")
    assert (
        main(["score", _write(tmp_path / "a.jsonl", first), "--db", str(db), "--no-embedder"]) == 0
    )
    kept, joined = _kept_and_joined(db)
    assert len(kept) == 120 and kept == joined and _current(db)

    changed = [dict(r, task={"objective": f"{r['task']['objective']} (again)"}) for r in first[:30]]
    later = _records(50, 4, "bot-v2")
    day2 = _write(tmp_path / "b.jsonl", changed + later)
    assert main(["score", day2, "--db", str(db), "--no-embedder"]) == 0
    kept, joined = _kept_and_joined(db)
    assert len(kept) == 170 and kept == joined and _current(db)
    objectives = dict(query_rows(db, f"SELECT trace_id, objective FROM {LATEST_TRACE_ROWS}"))
    assert all(objectives[r["id"]].endswith("(again)") for r in changed)
    seqs = query_rows(db, f"SELECT DISTINCT run_seq FROM {LATEST_TRACE_ROWS} ORDER BY 1")
    assert len(seqs) == 2  # the changed traces are the second run's

    assert main(["confidence", "--db", str(db), "--no-embedder", "--force"]) == 0
    kept, joined = _kept_and_joined(db)
    assert kept == joined and _current(db)

    assert main(["score", day2, "--db", str(db), "--no-embedder"]) == 0
    assert _kept_and_joined(db) == (kept, joined) and _current(db)


def test_a_run_killed_between_its_publications_is_folded_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run that published its scores and died before its levels leaves itself pending: the
    comparison then joins the stored rows (and says what it says once the table is current),
    and the next run folds its traces in."""
    from pipelines import confidence_stages

    db = tmp_path / "s.duckdb"
    first = _write(tmp_path / "a.jsonl", _records(100, 3, "bot-v1"))
    assert main(["score", first, "--db", str(db), "--no-embedder"]) == 0

    def killed(*args: object, **kwargs: object) -> None:
        raise SystemExit(137)

    monkeypatch.setattr(confidence_stages, "derived_stage", killed)
    second = _write(tmp_path / "b.jsonl", _records(100, 4, "bot-v2"))
    with pytest.raises(SystemExit):
        main(["score", second, "--db", str(db), "--no-embedder"])
    monkeypatch.undo()
    assert query_rows(db, f"SELECT count(*) FROM meta WHERE key = '{PENDING}'") == [(1,)]
    assert not _current(db)
    kept, joined = _kept_and_joined(db)
    assert len(kept) == 100 and len(joined) == 200  # the second run's traces are not in it yet

    args = ["--baseline", V1, "--candidate", V2, "--pair-by", "none", "--json"]
    capsys.readouterr()
    assert main(["compare", "--db", str(db), *args]) == 0, capsys.readouterr().err
    joined_read = json.loads(capsys.readouterr().out)
    assert joined_read["candidate"]["traces"] == 100

    assert main(["score", second, "--db", str(db), "--no-embedder"]) == 0
    kept, joined = _kept_and_joined(db)
    assert len(kept) == 200 and kept == joined and _current(db)
    capsys.readouterr()
    assert main(["compare", "--db", str(db), *args]) == 0
    kept_read = json.loads(capsys.readouterr().out)
    assert kept_read["candidate"] == joined_read["candidate"]
    # The scores the joined read compared are the kept table's (the levels came since).
    score = [
        next(m for m in read["metrics"] if m["metric"] == "score")
        for read in (joined_read, kept_read)
    ]
    for side in ("baseline_mean", "candidate_mean", "baseline_n", "candidate_n"):
        assert score[0][side] == pytest.approx(score[1][side], rel=1e-12)


def test_a_file_of_schema_7_is_folded_whole_by_its_next_publication(tmp_path: Path) -> None:
    """Migrated to schema 8 the table is empty and every published run pending (the comparison
    joins as before); the next run's fold fills it with every stored trace."""
    db = tmp_path / "s.duckdb"
    first = _write(tmp_path / "a.jsonl", _records(80, 3, "bot-v1"))
    assert main(["score", first, "--db", str(db), "--no-embedder"]) == 0
    old = tmp_path / "old.duckdb"
    shutil.copyfile(db, old)
    con = duckdb.connect(str(old))
    try:
        con.execute(
            f"DROP TABLE {LATEST_TRACE_ROWS}; DELETE FROM meta WHERE key = '{PENDING}'; "
            "UPDATE meta SET value = '7' WHERE key = 'schema_version'"
        )
    finally:
        con.close()

    DuckDBStore(old).close()  # a writer opens it: the migration
    assert query_rows(old, f"SELECT count(*) FROM {LATEST_TRACE_ROWS}") == [(0,)]
    assert query_rows(old, f"SELECT count(*) FROM meta WHERE key = '{PENDING}'") == [(1,)]
    assert not _current(old)

    second = _write(tmp_path / "b.jsonl", _records(20, 4, "bot-v2"))
    assert main(["score", second, "--db", str(old), "--no-embedder"]) == 0
    kept, joined = _kept_and_joined(old)
    assert len(kept) == 100 and kept == joined and _current(old)


def test_the_table_keeps_the_value_score_and_every_factor() -> None:
    from storage.schema.latest import SCORE_METRICS
    from transforms.config.scoring import FACTORS

    assert ("score", *FACTORS) == SCORE_METRICS
