"""Results do not depend on the machine's TZ, across the US DST change of 2026-03-08."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import duckdb
import pytest
from conftest import SEED_TRACE

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import fault_injection  # noqa: E402

ZONES = ("Asia/Tokyo", "America/New_York", "UTC")

# 2026-03-08: New York moves from EST (-05:00) to EDT (-04:00) at 02:00 local (07:00Z).
CREATED_AT = [
    "2026-03-08T05:10:00",  # naive = UTC
    "2026-03-08T00:30:00-05:00",  # 05:30Z
    "2026-03-08T14:45:00+09:00",  # 05:45Z
    "2026-03-08T06:20:00Z",
    "2026-03-08T01:40:00-05:00",  # 06:40Z, the last EST minutes
    "2026-03-08T02:30:00",  # naive; 02:30 does not exist on New York clocks that day
    "2026-03-08T16:55:00+09:00",  # 07:55Z
    "2026-03-08T03:05:00-04:00",  # 07:05Z, EDT
    "2026-03-08T04:30:00-04:00",  # 08:30Z
    "2026-03-08 09:15:00",  # naive, space separator
    "2026-03-08T10:10:00+00:00",
    "2026-03-08T20:00:00+09:00",  # 11:00Z
]
OBJECTIVES = [
    "Review PR #42 for security issues",
    "Review PR #43 for security issues",
    "Summarise the incident report for the payments outage",
    "Review PR #44 for SQL injection",
    "Plan the database migration to version 12",
    "Summarise the incident report for the login outage",
    "Review PR #45 for security issues",
    "Plan the cache migration to version 3",
    "Translate the release notes into French",
    "Review PR #46 for race conditions",
    "Translate the release notes into German",
    "Plan the database migration to version 13",
]


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tz")
    lines = []
    for index, (created, objective) in enumerate(zip(CREATED_AT, OBJECTIVES, strict=True)):
        trace = json.loads(json.dumps(SEED_TRACE))
        trace["id"] = f"kp:trace:tz-{index:02d}"
        trace["metadata"]["created_at"] = created
        trace["metadata"]["agent_id"] = "agent-a" if index % 3 else "agent-b"
        trace["task"]["objective"] = objective
        lines.append(json.dumps(trace))
    (folder / "day.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "tracegrade.toml").write_text("[novelty]\nttl_seconds = 3600\nmax_elements = 4\n")
    return folder


@pytest.fixture(scope="module")
def cache_db(exports: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every text embedded once (in a UTC child), all but the embeddings deleted."""
    db = tmp_path_factory.mktemp("tzcache") / "cache.duckdb"
    env = {**os.environ, "TZ": "UTC"}
    fault_injection.run_child(
        exports / "day.jsonl", db, exports / "tracegrade.toml", embed=True, env=env
    )
    con = duckdb.connect(str(db))
    for table in ("trace_rows", "score_rows", "quarantine", "files", "runs"):
        con.execute(f"DELETE FROM {table}")
    con.close()
    return db


def test_tables_are_identical_whatever_the_machine_timezone(
    exports: Path, cache_db: Path, tmp_path: Path
) -> None:
    snapshots = {}
    for zone in ZONES:
        db = tmp_path / f"{zone.replace('/', '_')}.duckdb"
        shutil.copy(cache_db, db)
        env = {**os.environ, "TZ": zone}
        fault_injection.run_child(
            exports / "day.jsonl", db, exports / "tracegrade.toml", embed=True, env=env
        )
        snapshots[zone] = fault_injection.snapshot(db)
    assert snapshots["Asia/Tokyo"] == snapshots["UTC"]
    assert snapshots["America/New_York"] == snapshots["UTC"]

    con = duckdb.connect(str(tmp_path / "America_New_York.duckdb"), read_only=True)
    try:
        con.execute("SET TimeZone = 'UTC'")
        rows = con.execute(
            "SELECT trace_id, strftime(created_at, '%Y-%m-%dT%H:%M:%S'), novelty_window, "
            "novelty_source FROM latest_scores ORDER BY created_at, trace_id"
        ).fetchall()
    finally:
        con.close()
    assert len(rows) == len(CREATED_AT)
    by_id = {trace_id: created for trace_id, created, _, _ in rows}
    assert by_id["kp:trace:tz-00"] == "2026-03-08T05:10:00"  # naive read as UTC
    assert by_id["kp:trace:tz-05"] == "2026-03-08T02:30:00"
    assert by_id["kp:trace:tz-07"] == "2026-03-08T07:05:00"  # -04:00 after the change
    assert by_id["kp:trace:tz-04"] == "2026-03-08T06:40:00"  # -05:00 before it
    # the one-hour TTL really limits windows, so a TZ slip would change them
    windows = [window for _, _, window, _ in rows]
    assert max(windows) > 0 and any(w == 0 for w in windows[1:])
