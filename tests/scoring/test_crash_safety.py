"""SIGKILL at random moments leaves a database that opens; a re-run equals a clean run."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import fault_injection  # noqa: E402
from conftest import run_pipeline  # noqa: E402

from pipelines.runs import work_root  # noqa: E402
from storage.store.registry import held_store  # noqa: E402
from storage.store.run_locks import hold_alive, let_go  # noqa: E402


def test_killed_runs_rerun_to_the_same_tables(tmp_path: Path) -> None:
    archive = fault_injection.write_archive(tmp_path / "archive", n_traces=1000)
    duration, trials = fault_injection.inject(archive, tmp_path / "work", kills=4, seed=3)
    assert duration > 0 and len(trials) == 4
    for trial in trials:
        assert trial.opened, trial
        assert trial.identical, trial
        # every run a kill interrupted is closed as such by the re-run, which completes
        assert trial.statuses_after_rerun[-1] == "completed", trial
        assert "running" not in trial.statuses_after_rerun, trial
        if "running" in trial.statuses_after_kill:
            assert "interrupted" in trial.statuses_after_rerun, trial
    assert any(trial.killed for trial in trials)
    assert not list((tmp_path / "work").glob(".killed.duckdb.work/*"))


def test_a_run_killed_before_it_was_recorded_leaves_no_folder_after_the_next(
    tmp_path: Path,
) -> None:
    archive = fault_injection.write_archive(tmp_path / "archive", n_traces=60)
    db = tmp_path / "db.duckdb"
    run_pipeline([archive], db, embed=False)
    with held_store(db) as store:
        root = work_root(store)
    let_go(hold_alive(root / "never-recorded"))  # its process ended before begin_run
    live = hold_alive(root / "still-starting")  # a run starting in another process
    try:
        run_pipeline([archive], db, embed=False)
        assert sorted(folder.name for folder in root.iterdir()) == ["still-starting"]
    finally:
        let_go(live)
