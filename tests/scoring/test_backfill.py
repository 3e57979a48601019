"""The real backfill flow: equals one scoring run, is a no-op when repeated, resumes."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
import yaml
from conftest import latest_scores, run_pipeline, table_snapshot
from polars.testing import assert_frame_equal

from tracegrade.demo import DEMO_START, write_demo_archive

ROOT = Path(__file__).resolve().parents[2]
DAYS = 4
START, END = DEMO_START, DEMO_START + timedelta(days=DAYS - 1)


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("archive")
    write_demo_archive(folder, n_traces=300, days=DAYS)
    return folder


def traces(db: Path) -> pl.DataFrame:
    con = duckdb.connect(str(db), read_only=True)
    try:
        frame = con.sql("SELECT * FROM traces").pl()
    finally:
        con.close()
    return frame.drop("run_id").sort("trace_id")


def run_backfill(archive: Path, db: Path, start: Any = START, end: Any = END) -> Any:
    from pipelines.flows import backfill

    return backfill([str(archive)], start=start, end=end, db=str(db), no_embedder=True)


def test_backfill_equals_one_run_and_repeating_it_is_a_no_op(
    prefect_server: None, archive: Path, tmp_path: Path
) -> None:
    db = tmp_path / "backfill.duckdb"
    summary = run_backfill(archive, db)
    assert summary.status == "completed"
    assert summary.counts["chunks_scored"] == DAYS
    # the summary shows the scores the chunk runs wrote
    assert summary.domains["traces"].sum() == summary.counts["rows_new"]
    assert summary.counts.get("rows_out_of_range", 0) == 0

    single = tmp_path / "single.duckdb"
    run_pipeline([archive], single, embed=False)
    assert_frame_equal(latest_scores(db), latest_scores(single), check_exact=True)
    assert_frame_equal(traces(db), traces(single), check_exact=True)

    before = table_snapshot(db)
    again = run_backfill(archive, db)
    assert again.status == "completed"
    assert again.counts["chunks_already_done"] == DAYS
    assert again.counts.get("chunks_scored", 0) == 0
    assert again.counts["rows_new"] == again.counts["rows_changed"] == 0
    assert table_snapshot(db) == before


def test_an_interrupted_backfill_resumes_with_the_missing_chunks(
    prefect_server: None, archive: Path, tmp_path: Path
) -> None:
    resumed = tmp_path / "resumed.duckdb"
    first = run_backfill(archive, resumed, START, START + timedelta(days=1))
    assert first.counts["chunks_scored"] == 2
    assert first.counts["rows_out_of_range"] > 0  # the later days wait for the resume
    second = run_backfill(archive, resumed)
    assert second.counts["chunks_already_done"] == 2
    assert second.counts["chunks_scored"] == DAYS - 2

    clean = tmp_path / "clean.duckdb"
    run_backfill(archive, clean)
    assert_frame_equal(latest_scores(resumed), latest_scores(clean), check_exact=True)
    assert_frame_equal(traces(resumed), traces(clean), check_exact=True)


def test_cli_backfill_and_a_bad_date(
    prefect_server: None, archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tracegrade.cli import main

    db = str(tmp_path / "cli.duckdb")
    day = START.isoformat()
    status = main(
        ["backfill", str(archive), "--start", day, "--end", day, "--db", db, "--no-embedder"]
    )
    assert status == 0
    assert "completed" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["backfill", str(archive), "--start", "2026-13-40", "--end", day, "--db", db])
    assert exc.value.code == 2
    assert "is not a date" in capsys.readouterr().err


def test_prefect_yaml_declares_a_valid_backfill_deployment() -> None:
    from prefect.cli.deploy._models import PrefectYamlModel
    from prefect.flows import load_flow_from_entrypoint

    raw = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    deployments = {d.name: d for d in PrefectYamlModel.model_validate(raw).deployments}
    assert "backfill" in deployments, "prefect.yaml has no backfill deployment"
    backfill = deployments["backfill"]
    assert backfill.entrypoint == "pipelines/flows.py:backfill"
    flow = load_flow_from_entrypoint(str(ROOT / backfill.entrypoint))
    assert flow.name == "backfill"
    parameters = dict(backfill.parameters)
    assert "start" in parameters and "end" in parameters
    validated = flow.validate_parameters(parameters)
    assert validated["start"] <= validated["end"]
    assert validated["paths"] and validated["db"].endswith(".duckdb")
    (raw_backfill,) = [d for d in raw["deployments"] if d["name"] == "backfill"]
    (raw_nightly,) = [d for d in raw["deployments"] if d["name"] == "nightly"]
    assert raw_backfill["work_pool"] == raw_nightly["work_pool"]
    assert raw_backfill.get("concurrency_limit") == 1
    assert validated["db"] == dict(deployments["nightly"].parameters)["db"]
