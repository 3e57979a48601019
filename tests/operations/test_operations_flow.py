"""The score_operations flow: its steps in this process, re-runs, and one real flow run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import query_rows, table_snapshot
from operations_helpers import CASES_FILE

from pipelines import operations as flow_module
from transforms.operations.run_summary import OperationsReport


def run_tasks(
    paths: list[Path], db: Path, scorer_set: str = "standard", *, force: bool = False
) -> tuple[dict[str, int], OperationsReport]:
    """The flow's steps in this process, without Prefect."""
    report = flow_module.score_operations(
        [str(p) for p in paths], db=str(db), scorer_set=scorer_set, force=force
    )
    return report.counts, report


def test_tasks_score_every_case_and_record_the_run(tmp_path: Path, db_path: Path) -> None:
    counts, report = run_tasks([CASES_FILE], db_path)
    assert counts == {
        "files_read": 1,
        "files_quarantined": 0,
        "rows_read": 10,
        "rows_quarantined": 0,
        "rows_unchanged": 0,
        "rows_scored": 10,
    }
    assert (report.cases, report.passed, report.failed, report.input_errors) == (10, 5, 5, 1)
    assert query_rows(db_path, "SELECT count(*), count(DISTINCT scorer) FROM operation_scores") == [
        (30, 3)
    ]
    (error,) = query_rows(
        db_path, "SELECT error FROM latest_operation_cases WHERE case_id = 'invalid-regex'"
    )
    assert "is not a valid regular expression" in error[0]
    ((flow, status, rows_scored, summary),) = query_rows(
        db_path, "SELECT flow, status, rows_scored, summary FROM runs"
    )
    assert (flow, status, rows_scored) == ("score_operations", "completed", 10)
    assert "## Failing cases by reason" in summary


def test_a_rerun_changes_nothing_but_the_run_log(tmp_path: Path, db_path: Path) -> None:
    run_tasks([CASES_FILE], db_path)
    before = table_snapshot(db_path)
    counts, report = run_tasks([CASES_FILE], db_path)
    assert counts["rows_scored"] == 0 and counts["rows_unchanged"] == 10
    assert table_snapshot(db_path) == before
    assert report.passed == 5  # the report covers the input's cases, scored now or before


def test_changed_cases_another_set_and_force_are_scored_again(
    tmp_path: Path, db_path: Path
) -> None:
    run_tasks([CASES_FILE], db_path)
    lines = CASES_FILE.read_text().splitlines()
    changed = json.loads(lines[5])  # wrong-target: now the model gets it right
    changed["actual_operations"] = changed["expected_operations"]
    edited = tmp_path / "cases.jsonl"
    edited.write_text("\n".join([*lines[:5], json.dumps(changed), *lines[6:]]) + "\n")
    counts, report = run_tasks([edited], db_path)
    assert (counts["rows_scored"], counts["rows_unchanged"]) == (1, 9)
    assert report.passed == 6
    assert query_rows(
        db_path, "SELECT passed FROM latest_operation_cases WHERE case_id = 'wrong-target'"
    ) == [(True,)]
    assert query_rows(
        db_path, "SELECT count(*) FROM operation_cases WHERE case_id = 'wrong-target'"
    ) == [(2,)]
    counts, _ = run_tasks([edited], db_path, "strict")
    assert counts["rows_scored"] == 10
    counts, _ = run_tasks([edited], db_path, force=True)
    assert counts["rows_scored"] == 10
    assert query_rows(
        db_path,
        "SELECT scorer_set, count(*), sum(passed::INT) FROM latest_operation_cases GROUP BY 1 ORDER BY 1",
    ) == [("standard", 10, 6), ("strict", 10, 4)]


@pytest.mark.slow
def test_the_real_flow_leaves_a_report_artifact(prefect_server: None, db_path: Path) -> None:
    from prefect.artifacts import Artifact

    from pipelines.flows import score_operations

    report = score_operations([str(CASES_FILE)], db=str(db_path), scorer_set="strict")
    assert (report.scorer_set, report.passed, report.failed) == ("strict", 3, 7)
    artifact = Artifact.get("score-operations-report")
    assert artifact is not None and report.run_id in str(artifact.data)
    assert Artifact.get("score-operations-report-domains") is not None
    link = Artifact.get("score-operations-report-report")
    page = db_path.with_name(db_path.name + ".report.html").resolve()
    assert link is not None and f"`{page}`" in str(link.data)
    assert "Failing cases, with the first reason" in page.read_text()
    assert query_rows(db_path, "SELECT status FROM runs") == [("completed",)]
    assert not any(
        p.name.endswith(".work") and any(p.iterdir())
        for p in db_path.parent.iterdir()
        if p.is_dir()
    )
