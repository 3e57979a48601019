"""A comparison of selections that hold few of the stored traces reads only those traces
(`storage.compare.store._narrowed`): it gives what the whole read gives, on selections by
agent, run, tag and time, on a trace scored again as another agent, on the level (which it
leaves to the whole read), on two databases and on a DuckLake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import query_rows

import storage.compare.store as compare_store
from storage.store.duckdb_store import DuckDBStore
from tracegrade.cli import main
from transforms.synth.traces import synthetic_traces, to_json_records

_MOVED = 7
"""The task whose version 1 trace the second day scores again, naming another agent."""


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two days: version 1 and version 2 of an agent on the same 60 tasks, then a day that
    scores one of version 1's traces again with another agent named (a new version of the
    trace) and 30 traces of a third agent."""
    folder = tmp_path_factory.mktemp("narrowed")
    records = to_json_records(synthetic_traces(60, seed=5))
    first_day, second_day = [], []
    for n, record in enumerate(records):
        first = json.loads(json.dumps(record, default=str))
        first["metadata"]["agent_id"] = "bot-v1"
        second = json.loads(json.dumps(first))
        second["id"] = first["id"].replace("kp:trace:", "kp:trace:v2-")
        second["metadata"].update(agent_id="bot-v2", tags=["canary"], success=n % 3 != 0)
        first_day += [json.dumps(first), json.dumps(second)]
        if n == _MOVED:
            moved = json.loads(json.dumps(first))
            moved["metadata"]["agent_id"] = "bot-moved"
            second_day.append(json.dumps(moved))
        if n < 30:
            third = json.loads(json.dumps(first))
            third["id"] = first["id"].replace("kp:trace:", "kp:trace:v3-")
            third["metadata"]["agent_id"] = "bot-v3"
            second_day.append(json.dumps(third))
    path = folder / "n.duckdb"
    for name, lines in (("one.jsonl", first_day), ("two.jsonl", second_day)):
        export = folder / name
        export.write_text("\n".join(lines) + "\n")
        assert main(["score", str(export), "--db", str(path), "--no-embedder"]) == 0
    return path


def _compared(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    share: float,
    db: Path | str,
    *args: str,
) -> tuple[int, dict[str, object], str, bool]:
    """The comparison's exit status, JSON (as data and as text), and whether it read the
    selected traces alone."""
    narrowed: list[bool] = []
    found_by = compare_store._narrowed

    def spied(*a: object, **k: object) -> str:
        within = found_by(*a, **k)  # type: ignore[arg-type]
        narrowed.append(within != "true")
        return within

    monkeypatch.setattr(compare_store, "NARROW_SHARE", share)
    monkeypatch.setattr(compare_store, "_narrowed", spied)
    status = main(["compare", "--db", str(db), *args, "--json"])
    found = json.loads(capsys.readouterr().out)
    text = json.dumps(found, sort_keys=True)
    return status, found, text, narrowed == [True]


def _numbers_alike(a: object, b: object) -> bool:
    """The same JSON but for the last bits of a sum (DuckDB adds in the order its threads
    finish)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=1e-9, abs=1e-12, nan_ok=True)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_numbers_alike(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_numbers_alike(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.mark.parametrize(
    ("baseline", "candidate"),
    [
        ("agent_id = 'bot-v1'", "agent_id = 'bot-v2'"),
        ("run:1", "run:2"),
        ("agent_id = 'bot-v1'", "list_contains(tags, 'canary')"),
        ("agent_id = 'bot-v1' AND success", "agent_id = 'bot-v2' AND success"),
        ("time:..2026-01-15", "time:2026-01-15.."),
        ("level = 'NOTIFY'", "level <> 'NOTIFY'"),
    ],
)
def test_a_narrowed_read_gives_what_the_whole_read_gives(
    db: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    baseline: str,
    candidate: str,
) -> None:
    args = ("--baseline", baseline, "--candidate", candidate, "--fail-on", "score < -0.01")

    whole = _compared(monkeypatch, capsys, 0.0, db, *args)
    narrowed = _compared(monkeypatch, capsys, 1.0, db, *args)

    assert not whole[3]
    assert narrowed[3] is ("level" not in baseline)  # the level is left to the whole read
    assert whole[0] == narrowed[0]
    assert _numbers_alike(whole[1], narrowed[1]), (whole[2], narrowed[2])
    assert whole[1]["baseline"]["traces"] > 0  # type: ignore[index]


def test_a_trace_scored_again_as_another_agent_counts_as_its_newest_version(
    db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The moved trace's first score names bot-v1 and its second bot-moved; the store keeps
    its newest content, so a selection of bot-v1 no longer holds it, narrowed or not."""
    ((scores, contents),) = query_rows(
        db,
        "SELECT (SELECT count(*) FROM scores WHERE trace_id = m.trace_id), "
        "(SELECT count(*) FROM traces WHERE trace_id = m.trace_id) "
        "FROM traces m WHERE agent_id = 'bot-moved'",
    )
    args = ("--baseline", "agent_id = 'bot-v1'", "--candidate", "agent_id = 'bot-moved'")

    whole = _compared(monkeypatch, capsys, 0.0, db, *args, "--pair-by", "none")
    narrowed = _compared(monkeypatch, capsys, 1.0, db, *args, "--pair-by", "none")

    assert (scores, contents) == (2, 1)
    assert narrowed[3] and not whole[3]
    assert whole[0] == narrowed[0] == 0
    for _, found, _, _ in (whole, narrowed):
        assert found["baseline"]["traces"] == 59  # type: ignore[index]
        assert found["candidate"]["traces"] == 1  # type: ignore[index]
    assert _numbers_alike(whole[1], narrowed[1])


def test_two_databases_narrowed_give_what_the_whole_read_gives(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other.duckdb"
    export = tmp_path / "v2.jsonl"
    lines = (db.parent / "one.jsonl").read_text().splitlines()
    export.write_text("\n".join(line for line in lines if '"bot-v2"' in line) + "\n")
    assert main(["score", str(export), "--db", str(other), "--no-embedder"]) == 0
    capsys.readouterr()
    args = ("--baseline-db", str(other), "--baseline", "success", "--candidate", "run:2")

    whole = _compared(monkeypatch, capsys, 0.0, db, *args)
    narrowed = _compared(monkeypatch, capsys, 1.0, db, *args)

    assert narrowed[3] and not whole[3]
    assert whole[0] == narrowed[0] == 0
    assert _numbers_alike(whole[1], narrowed[1]), (whole[2], narrowed[2])


@pytest.mark.parametrize(
    ("baseline", "narrowed"),
    [
        ("agent_id = 'bot-v3'", True),
        ("level = 'NOTIFY'", False),  # the level is not known before the whole read
        ("random() < 0.5", False),  # drawn again by the whole read: left to it alone
        ("created_at < now()", False),
        ("created_at < current_timestamp", False),
        ("agent_id <> 'bot-v3'", False),  # more than a quarter of the stored traces
        ("no_such_column = 1", False),  # the whole read says what is wrong
    ],
)
def test_which_selections_are_read_alone(
    db: Path, monkeypatch: pytest.MonkeyPatch, baseline: str, narrowed: bool
) -> None:
    """With run 2 as the candidate: 31 of the 151 stored scores, a fifth."""
    monkeypatch.setattr(compare_store, "NARROW_SHARE", 0.25)
    chosen = (compare_store.selection_sql(baseline), compare_store.selection_sql("run:2"))
    store = DuckDBStore(db, read_only=True)
    try:
        stored = compare_store._stored(store, ("",))
        within = compare_store._narrowed(store, chosen, ("",), False, stored)
        kept = (
            store.rows(f"SELECT count(*) FROM {compare_store.CANDIDATES}")[0][0]
            if narrowed
            else None
        )
    finally:
        store.close()

    assert (within != "true") is narrowed
    if narrowed:
        assert kept == 31  # bot-v3's 30 traces and the moved trace, which run 2 read


def test_a_ducklake_narrowed_gives_what_one_file_gives(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same two days scored into a DuckLake (SQLite catalog): its narrowed read, its whole
    read and the file's read agree."""
    lake = f"ducklake:sqlite:{tmp_path / 'meta.sqlite'}"
    data = ["--data-path", str(tmp_path / "data")]
    for name in ("one.jsonl", "two.jsonl"):
        assert main(["score", str(db.parent / name), "--db", lake, *data, "--no-embedder"]) == 0
    capsys.readouterr()
    args = ("--baseline", "agent_id = 'bot-v3'", "--candidate", "run:2", "--pair-by", "none")

    narrowed = _compared(monkeypatch, capsys, 1.0, lake, *args)
    whole = _compared(monkeypatch, capsys, 0.0, lake, *args)
    one_file = _compared(monkeypatch, capsys, 1.0, db, *args)

    assert narrowed[3] and one_file[3] and not whole[3]
    assert narrowed[0] == whole[0] == one_file[0] == 0
    assert narrowed[1]["candidate"]["traces"] == 31  # type: ignore[index]
    assert _numbers_alike(narrowed[1], whole[1]), (narrowed[2], whole[2])
    assert _numbers_alike(narrowed[1], one_file[1]), (narrowed[2], one_file[2])
