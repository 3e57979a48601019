"""`tracegrade operations`: the report on stdout and the exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
from operations_helpers import CASES_FILE

from tracegrade.cli import main
from tracegrade.cli.exits import EXIT_CASES_FAILED, EXIT_NOTHING_SCORED, EXIT_OK, EXIT_USAGE

ROOT = Path(__file__).resolve().parents[2]


def test_invalid_set_exits_2_before_touching_the_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "x.duckdb"
    status = main(["operations", str(CASES_FILE), "--db", str(db), "--set", "fast"])
    assert status == EXIT_USAGE
    assert "scorer set 'fast' does not exist" in capsys.readouterr().err
    assert not db.exists()


@pytest.mark.slow
def test_operations_prints_the_report_and_check_fails_on_failing_cases(
    prefect_server: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "x.duckdb")
    assert main(["operations", str(CASES_FILE), "--db", db]) == EXIT_OK
    out = capsys.readouterr().out
    assert "scorer set 'standard'" in out and "| cases passed | 5 |" in out
    args = [
        "operations",
        str(CASES_FILE),
        "--db",
        db,
        "--scorers",
        str(ROOT / "configs" / "scorers.toml"),
    ]
    assert main([*args, "--set", "standard-with-latency", "--check"]) == EXIT_CASES_FAILED
    captured = capsys.readouterr()
    assert "| response-time | 0.5 | 0.5 |" in captured.out
    assert "cases failed" in captured.err


@pytest.mark.slow
def test_missing_input_exits_2_and_empty_input_exits_1(
    prefect_server: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "x.duckdb")
    assert main(["operations", str(tmp_path / "none.jsonl"), "--db", db]) == EXIT_USAGE
    assert "none.jsonl does not exist" in capsys.readouterr().err
    (tmp_path / "empty.jsonl").write_text("")
    assert main(["operations", str(tmp_path / "empty.jsonl"), "--db", db]) == EXIT_NOTHING_SCORED
