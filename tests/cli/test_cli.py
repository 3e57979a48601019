"""The command line: exit codes and output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SEED_TRACE

from tracegrade.cli import main
from tracegrade.cli.exits import EXIT_NOTHING_SCORED, EXIT_OK, EXIT_USAGE


def test_console_script_is_installed() -> None:
    done = subprocess.run(
        [Path(sys.executable).parent / "tracegrade", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "score" in done.stdout and "demo" in done.stdout


def test_invalid_config_exits_2_naming_the_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[novelty]\nmax_elements = -1\n")
    (tmp_path / "a.jsonl").write_text(json.dumps(SEED_TRACE) + "\n")
    status = main(
        [
            "score",
            str(tmp_path / "a.jsonl"),
            "--db",
            str(tmp_path / "x.duckdb"),
            "--config",
            str(config),
        ]
    )
    assert status == EXIT_USAGE
    assert "novelty.max_elements = -1" in capsys.readouterr().err
    assert not (tmp_path / "x.duckdb").exists()


def test_missing_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(
        ["score", str(tmp_path / "nothing-here.jsonl"), "--db", str(tmp_path / "x.duckdb")]
    )
    assert status == EXIT_USAGE
    assert "nothing-here.jsonl" in capsys.readouterr().err


def test_sql_on_a_missing_database_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "nope.duckdb"
    assert main(["sql", "SELECT 1", "--db", str(db)]) == EXIT_USAGE
    assert f"database {db} does not exist" in capsys.readouterr().err
    assert not db.exists()


def test_score_prints_the_summary_and_exits_0(
    prefect_server: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.jsonl").write_text(json.dumps(SEED_TRACE) + "\n")
    db = tmp_path / "x.duckdb"
    assert main(["score", str(tmp_path / "a.jsonl"), "--db", str(db), "--no-embedder"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "| rows scored (valid) | 1 |" in out and "code-review" in out
    assert (
        main(["sql", "SELECT round(score, 5) AS s FROM latest_scores", "--db", str(db)]) == EXIT_OK
    )
    assert "0.66875" in capsys.readouterr().out


def test_nothing_scorable_exits_1(prefect_server: None, tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('not json\n{"id": null}\n')
    status = main(
        ["score", str(tmp_path / "bad.jsonl"), "--db", str(tmp_path / "x.duckdb"), "--no-embedder"]
    )
    assert status == EXIT_NOTHING_SCORED


def test_demo_scores_the_archive_and_its_queries_run(
    prefect_server: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import duckdb

    from tracegrade.demo import DEMO_QUERIES, expected_counts

    folder = tmp_path / "demo"
    assert main(["demo", "--dir", str(folder), "--no-embedder"]) == EXIT_OK
    out = capsys.readouterr().out
    expected = expected_counts()
    assert f"| rows read | {expected['records']:,} |" in out
    assert f"| rows scored (valid) | {expected['scored']:,} |" in out
    for title, _query in DEMO_QUERIES:
        assert title in out
    con = duckdb.connect(str(folder / "demo.duckdb"), read_only=True)
    try:
        results = [con.sql(query).fetchall() for _title, query in DEMO_QUERIES]
        by_rule = dict(con.sql("SELECT rule, count(*) FROM quarantine GROUP BY rule").fetchall())
    finally:
        con.close()
    assert all(results)
    assert by_rule.pop("empty_file") == expected["empty_files"]
    assert by_rule == {rule: n for rule, n in expected["quarantined_by_rule"].items() if n}


@pytest.mark.slow
def test_a_run_on_a_temporary_prefect_server_ends_without_a_logging_error(tmp_path: Path) -> None:
    """Prefect's log and event workers send what they hold before the temporary server
    stops; at exit they found it gone and printed "Error logging to API" (issue 47)."""
    export = tmp_path / "a.jsonl"
    export.write_text(json.dumps(SEED_TRACE) + "\n")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("PREFECT_API_URL", None)
    done = subprocess.run(
        [
            Path(sys.executable).parent / "tracegrade",
            "score",
            str(export),
            "--db",
            str(tmp_path / "t.duckdb"),
            "--no-embedder",
            "--prefect",
        ],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    assert done.returncode == EXIT_OK, done.stderr[-3000:]
    assert "Error logging to API" not in done.stderr and "Traceback" not in done.stderr
