"""Outcomes a producer did not record (SPEC 1, issue 40 must-have 5): a chat trajectory without
its success field is scored with `metadata.success` null, stored as null, and left out of the
levels against labels (`confidence --evaluate`, the report) as unknown, never counted as a
failure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import query_rows

from pipelines.report import write_report
from pipelines.score import score_traces
from tracegrade.cli.app import main


def _trajectory(task: int, reply: str, reward: int | None) -> dict[str, object]:
    record: dict[str, object] = {
        "task_id": task,
        "trial": 0,
        "traj": [
            {"role": "user", "content": f"Cancel reservation {task}."},
            {"role": "assistant", "content": reply},
        ],
    }
    if reward is not None:
        record["reward"] = reward
    return record


@pytest.fixture()
def scored(tmp_path: Path) -> Path:
    """Six tau-bench-style trajectories: two succeeded, two failed, two record no reward."""
    rewards = [1, 0, None, 1, 0, None]
    source = tmp_path / "runs.json"
    source.write_text(
        json.dumps([_trajectory(n, f"done {n}", r) for n, r in enumerate(rewards)]), "utf-8"
    )
    db = tmp_path / "scores.duckdb"
    summary = score_traces([str(source)], db=str(db), no_embedder=True)
    assert (summary.counts["rows_scored"], summary.counts["rows_quarantined"]) == (6, 0)
    return db


def test_a_trajectory_without_its_success_field_is_stored_with_success_null(
    scored: Path,
) -> None:
    rows = query_rows(
        scored,
        "SELECT t.success, count(*), min(s.outcome_confidence) FROM traces t "
        "JOIN latest_scores s USING (trace_id) GROUP BY ALL ORDER BY t.success NULLS LAST",
    )
    assert rows == [(False, 2, 0.3), (True, 2, 1.0), (None, 2, 0.3)]


def test_levels_against_labels_leave_unknown_outcomes_out(
    scored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["confidence", "--db", str(scored), "--evaluate", "success"]) == 0
    printed = capsys.readouterr().out
    assert "| traces with a level and a label | 4 |" in printed
    assert "| of them failed (label 0) | 2 |" in printed
    assert "| traces with a level but no label (left out) | 2 |" in printed


def test_the_report_leaves_unknown_outcomes_out(scored: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    write_report(scored, page)
    text = page.read_text("utf-8")
    assert "over 4 traces (2 good, 2 failed). 2 traces with a level but no label" in text
