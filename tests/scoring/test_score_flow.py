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
    note = Artifact.get("score-traces-summary-report")
    report = db_path.with_name(db_path.name + ".report.html").resolve()
    # no TRACEGRADE_REPORT_URL: no file:// link (browsers refuse it from the UI), the path
    assert note is not None and report.exists()
    assert f"`{report}`" in str(note.data) and "file://" not in str(note.data)

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


def test_artifacts_show_the_summary_quantiles_and_link_the_served_report(
    prefect_server: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One figure, one value: the table artifact and the report show each domain's median and
    p90 as the run summary does (the exact linear quantile; the report's approximate one was
    0.5695 where the summary said 0.5685). With TRACEGRADE_REPORT_URL the report artifact is
    a link the Prefect UI opens, its text the path on the worker."""
    from prefect.artifacts import Artifact

    from pipelines.flows import score_traces
    from tracegrade.demo import write_demo_archive

    write_demo_archive(tmp_path / "exports", n_traces=600, days=3)
    db = tmp_path / "q.duckdb"
    monkeypatch.setenv("TRACEGRADE_REPORT_URL", "http://reports.example:8081/tracegrade/")
    summary = score_traces([str(tmp_path / "exports")], db=str(db), no_embedder=True)
    table = Artifact.get("score-traces-summary-domains")
    assert table is not None
    data = table.data
    shown = {row["domain"]: row for row in (json.loads(data) if isinstance(data, str) else data)}
    assert len(shown) == summary.domains.height > 1
    for row in summary.domains.iter_rows(named=True):
        assert shown[row["domain"]]["median_score"] == f"{row['median']:.4f}"
        assert shown[row["domain"]]["p90_score"] == f"{row['p90']:.4f}"
        assert (
            f"| {row['domain']} | {row['traces']} | {row['p10']:.4f} | {row['median']:.4f} |"
            in (summary.markdown)
        )
    page = db.with_name("q.duckdb.report.html").resolve()
    html = page.read_text()
    for row in summary.domains.iter_rows(named=True):
        assert f"{row['median']:.4f}" in html
    link = Artifact.get("score-traces-summary-report")  # Prefect stores a link as Markdown
    assert link is not None
    assert (
        str(link.data) == f"[{page}](http://reports.example:8081/tracegrade/q.duckdb.report.html)"
    )


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


def test_an_export_folder_with_nothing_delivered_is_nothing_to_do(tmp_path: Path) -> None:
    """The nightly deployment (empty_ok: true) on a night with no export: completed, nothing
    recorded, a note; the same folder named on the command line stays an error, and a path
    that does not exist is an error either way."""
    from pipelines.score import score_traces
    from storage.errors import InputError, NoInputFilesError

    exports = tmp_path / "exports"
    exports.mkdir()
    db = tmp_path / "n.duckdb"
    summary = score_traces([str(exports)], db=str(db), no_embedder=True, empty_ok=True)
    assert summary.status == "completed" and summary.counts == {"files_read": 0}
    assert "nothing to do" in summary.markdown and str(exports) in summary.markdown
    assert not db.exists()
    with pytest.raises(NoInputFilesError, match="holds no trace files"):
        score_traces([str(exports)], db=str(db), no_embedder=True)
    with pytest.raises(InputError, match="does not exist"):
        score_traces([str(tmp_path / "missing")], db=str(db), no_embedder=True, empty_ok=True)
    (exports / "day.jsonl").write_text(json.dumps(SEED_TRACE) + "\n")
    (tmp_path / "other").mkdir()  # a second export folder, still empty, is left out
    paths = [str(exports), str(tmp_path / "other")]
    scored = score_traces(paths, db=str(db), no_embedder=True, empty_ok=True)
    assert scored.counts["rows_scored"] == 1 and scored.counts["files_read"] == 1
