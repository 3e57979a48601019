"""The real Prefect flow (temporary local server) and the deployments in prefect.yaml."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
import yaml
from conftest import SEED_TRACE

ROOT = Path(__file__).resolve().parents[2]


def test_flow_scores_with_the_real_embedder_and_leaves_a_summary(
    prefect_server: None, tmp_path: Path, db_path: Path
) -> None:
    from prefect.artifacts import Artifact

    from pipelines.flows import score_traces

    second = json.loads(json.dumps(SEED_TRACE))
    second["id"] = "kp:trace:second"
    second["metadata"]["created_at"] = "2026-01-05T10:00:00+01:00"
    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / "day.jsonl").write_text(
        json.dumps(SEED_TRACE) + "\n" + json.dumps(second) + "\n{broken\n"
    )
    summary = score_traces([str(exports)], db=str(db_path))
    assert summary.status == "completed"
    assert summary.counts["rows_read"] == 3
    assert summary.counts["rows_scored"] == 2
    assert summary.counts["rows_quarantined"] == 1
    assert summary.counts["texts_embedded"] == 1  # the two traces share one text
    assert "| invalid_json | 1 |" in summary.markdown
    artifact = Artifact.get("score-traces-summary")
    assert artifact is not None and summary.run_id in str(artifact.data)
    domains = Artifact.get("score-traces-summary-domains")
    assert domains is not None and '"traces": 2' in str(domains.data)
    link = Artifact.get("score-traces-summary-report")
    report = db_path.with_name(db_path.name + ".report.html")
    assert link is not None and report.as_uri() in str(link.data) and report.exists()

    con = duckdb.connect(str(db_path), read_only=True)
    rows = con.sql(
        "SELECT trace_id, novelty, novelty_source FROM latest_scores ORDER BY created_at"
    ).fetchall()
    runs = con.sql("SELECT status, rows_scored, summary FROM runs").fetchall()
    con.close()
    # same text, same agent cache: the first sees an empty cache, the second its twin
    assert rows[0][1:] == (0.5, "empty_cache")
    assert rows[1][1] == pytest.approx(0.0, abs=1e-6) and rows[1][2] == "embedding"
    assert runs[0][:2] == ("completed", 2) and summary.run_id in runs[0][2]
    assert not any(p.name.startswith(".") for p in exports.iterdir())


def test_prefect_yaml_declares_a_valid_nightly_deployment() -> None:
    from prefect.cli.deploy._models import PrefectYamlModel
    from prefect.client.schemas.schedules import CronSchedule
    from prefect.flows import load_flow_from_entrypoint

    raw = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    model = PrefectYamlModel.model_validate(raw)
    deployments = {d.name: d for d in model.deployments}
    nightly = deployments["nightly"]
    assert nightly.entrypoint == "pipelines/flows.py:score_traces"
    flow = load_flow_from_entrypoint(str(ROOT / nightly.entrypoint))
    assert flow.name == "score_traces"
    validated = flow.validate_parameters(dict(nightly.parameters))
    assert validated["paths"] and validated["db"].endswith(".duckdb")
    (schedule,) = raw["deployments"][0]["schedules"]
    cron = CronSchedule(cron=schedule["cron"], timezone=schedule["timezone"])
    assert cron.timezone == "UTC"
    assert raw["deployments"][0]["concurrency_limit"] == 1


def test_nightly_and_backfill_share_one_writer_queue() -> None:
    from prefect.cli.deploy._models import PrefectYamlModel
    from prefect.flows import load_flow_from_entrypoint

    raw = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    deployments = {d.name: d for d in PrefectYamlModel.model_validate(raw).deployments}
    backfill = deployments["backfill"]
    flow = load_flow_from_entrypoint(str(ROOT / backfill.entrypoint))
    assert flow.name == "backfill"
    validated = flow.validate_parameters(dict(backfill.parameters))
    assert str(validated["start"]) == "2026-01-01" and validated["chunk_days"] == 1
    pools = {
        (d["work_pool"]["name"], d["work_pool"]["work_queue_name"]) for d in raw["deployments"]
    }
    assert pools == {("tracegrade", "writer")}
