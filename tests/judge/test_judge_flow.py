"""The real judge_traces flow, `tracegrade judge`, the nightly step and prefect.yaml, with real
pydantic-ai requests to a fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import SEED_TRACE, query_rows
from judge_helpers import error_reply, fake_server, tool_reply, write_config

from tracegrade.cli import main

ROOT = Path(__file__).resolve().parents[2]

CONFIG = """
[llm_default]
model = "openai-chat:judge"
max_retries = 1

[[metrics]]
name = "Coverage"
weight = 0.6

[[metrics]]
name = "Relevance"
weight = 0.4

[prices."openai-chat:judge"]
input_per_mtok = 1.0
output_per_mtok = 2.0
"""

GOOD = tool_reply({"score": 64, "comment": "covers most of it"})


def exports(tmp_path: Path) -> Path:
    second = json.loads(json.dumps(SEED_TRACE))
    second["id"] = "kp:trace:second"
    second["outcome"]["result_summary"] = "   "
    folder = tmp_path / "exports"
    folder.mkdir(parents=True)
    (folder / "day.jsonl").write_text(json.dumps(SEED_TRACE) + "\n" + json.dumps(second) + "\n")
    return folder


def test_nightly_skips_the_judge_without_config_or_key_and_still_succeeds(
    prefect_server: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.flows import score_traces

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    db = tmp_path / "n.duckdb"
    summary = score_traces([str(exports(tmp_path))], db=str(db), no_embedder=True)
    assert summary.status == "completed"
    assert "The LLM judge was skipped: no judge configuration was given" in summary.markdown
    config = write_config(tmp_path, CONFIG.replace("openai-chat:judge", "openai:gpt-5"))
    summary = score_traces(
        [str(exports(tmp_path / "b"))], db=str(db), no_embedder=True, judge_config=str(config)
    )
    assert summary.status == "completed"
    assert "the API key is missing: OPENAI_API_KEY is not set" in summary.markdown


def test_nightly_judges_after_scoring_and_a_rerun_makes_no_call(
    prefect_server: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.flows import score_traces

    db = tmp_path / "n.duckdb"
    config = write_config(tmp_path, CONFIG)
    with fake_server(lambda n: GOOD, monkeypatch) as server:
        summary = score_traces(
            [str(exports(tmp_path))], db=str(db), no_embedder=True, judge_config=str(config)
        )
        # Two metrics of the first trace; the second trace's answer is whitespace: no call.
        assert server.count == 2
        assert "# tracegrade judge run" in summary.markdown
        assert "| submissions rejected: empty or whitespace-only (no call, no score) | 1 |" in (
            summary.markdown
        )
        assert query_rows(db, "SELECT count(*) FROM scores") == [(2,)]
        assert query_rows(
            db, "SELECT item_id, status, overall_score FROM latest_judge_scores ORDER BY 1"
        ) == [
            ("kp:trace:550e8400-e29b-41d4-a716-446655440000", "ok", 64.0),
            ("kp:trace:second", "invalid_input", None),
        ]
        prompt = server.requests[0]["messages"][-1]["content"]
        assert SEED_TRACE["task"]["objective"] in prompt
        assert SEED_TRACE["outcome"]["result_summary"] in prompt
        score_traces(
            [str(exports(tmp_path / "b"))], db=str(db), no_embedder=True, judge_config=str(config)
        )
        assert server.count == 2
    runs = query_rows(db, "SELECT flow, status FROM runs ORDER BY run_seq")
    assert runs == [
        ("score_traces", "completed"),
        ("judge_traces", "completed"),
        ("score_traces", "completed"),
        ("judge_traces", "completed"),
    ]


def test_cli_score_with_a_judge_config(
    prefect_server: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = tmp_path / "s.duckdb"
    args = ["score", str(exports(tmp_path)), "--db", str(db), "--no-embedder"]
    assert main(args) == 0
    assert "The LLM judge was skipped: no judge configuration was given" in capsys.readouterr().out
    config = write_config(tmp_path, CONFIG)
    with fake_server(lambda n: GOOD, monkeypatch) as server:
        assert main([*args, "--force", "--judge-config", str(config)]) == 0
        assert server.count == 2
    out = capsys.readouterr().out
    assert "# tracegrade run" in out and "# tracegrade judge run" in out


def test_cli_judges_a_table_and_the_second_run_calls_nothing(
    prefect_server: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    table = tmp_path / "answers.csv"
    table.write_text(
        "id,user_query,submission\n1,What is 2+2?,4\n2,Name a colour,Blue\n", encoding="utf-8"
    )
    db = tmp_path / "t.duckdb"
    config = write_config(tmp_path, CONFIG)
    args = ["judge", "--db", str(db), "--config", str(config), "--table", str(table)]
    with fake_server(lambda n: GOOD, monkeypatch) as server:
        assert main([*args, "--dry-run"]) == 0
        out = capsys.readouterr().out
        assert server.count == 0
        assert "calls to make: 4" in out and "estimated cost: $" in out
        assert main(args) == 0
        out = capsys.readouterr().out
        assert server.count == 4
        assert "| submissions with an overall score | 2 |" in out
        assert main(args) == 0
        out = capsys.readouterr().out
        assert server.count == 4
        assert "| judgements reused from the store (no call) | 4 |" in out
        assert main([*args, "--dry-run"]) == 0
        assert "calls to make: 0" in capsys.readouterr().out
    rows = query_rows(
        db,
        "SELECT item_id, metric, status, model, prompt_version, parameters->>'$.max_retries', "
        "input_tokens, output_tokens, attempts, cost_usd > 0 FROM judge_results ORDER BY 1, 2",
    )
    assert rows[0] == (
        "1",
        "Coverage",
        "ok",
        "openai-chat:judge",
        "tg-coverage-2026.1",
        "1",
        120,
        30,
        1,
        True,
    )


def test_cli_run_failure_exit_code_and_check(
    prefect_server: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    table = tmp_path / "answers.jsonl"
    table.write_text(json.dumps({"id": "a", "user_query": "q", "submission": "s"}) + "\n")
    db = tmp_path / "t.duckdb"
    config = write_config(tmp_path, CONFIG)
    args = ["judge", "--db", str(db), "--config", str(config), "--table", str(table)]
    with fake_server(lambda n: error_reply(401), monkeypatch) as server:
        assert main([*args, "--check"]) == 0
        assert "valid (live mode" in capsys.readouterr().out
        assert main(args) == 4
        assert server.count == 1
        captured = capsys.readouterr()
        assert "Stopped early: authentication or quota error" in captured.out
        assert "the judge run failed" in captured.err
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL")
    # a check and a dry run need no key: they say which one a live run needs
    assert main([*args, "--check"]) == 0
    out = capsys.readouterr().out
    assert "A live run needs" in out and "OPENAI_API_KEY (not set)" in out
    assert main([*args, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "calls to make: 2" in out and "OPENAI_API_KEY (not set)" in out
    assert main([*args, "--check", "--probe"]) == 2  # the probe calls: it needs the key
    assert "environment variable OPENAI_API_KEY" in capsys.readouterr().err
    assert main([*args, "--budget", "1"]) == 2  # the key is checked before anything else


def test_budget_needs_prices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    config = write_config(tmp_path, CONFIG.split("[prices")[0])
    code = main(
        ["judge", "--db", str(tmp_path / "x.duckdb"), "--config", str(config), "--budget", "2"]
    )
    assert code == 2
    assert '[prices."openai-chat:judge"]' in capsys.readouterr().err


def test_prefect_yaml_declares_the_judge_step_and_the_collector() -> None:
    from prefect.cli.deploy._models import PrefectYamlModel
    from prefect.flows import load_flow_from_entrypoint

    raw = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    deployments = {d.name: d for d in PrefectYamlModel.model_validate(raw).deployments}
    nightly = deployments["nightly"]
    flow = load_flow_from_entrypoint(str(ROOT / nightly.entrypoint))
    assert flow.validate_parameters(dict(nightly.parameters))["judge_config"] == (
        "configs/evaluator.toml"
    )
    collect = deployments["judge-collect"]
    flow = load_flow_from_entrypoint(str(ROOT / collect.entrypoint))
    assert flow.name == "judge_collect"
    assert flow.validate_parameters(dict(collect.parameters))["db"].endswith(".duckdb")


def test_batch_mode_through_the_flows(
    prefect_server: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from judge_helpers import FakeBatchProvider, fake_batch_model

    from pipelines.flows import judge_collect, judge_traces
    from pipelines.judge import batch

    provider = FakeBatchProvider()
    monkeypatch.setattr(batch, "default_model_factory", lambda name: fake_batch_model(provider))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    table = tmp_path / "answers.csv"
    table.write_text("id,user_query,submission\n1,q,a\n2,q,b\n", encoding="utf-8")
    db = tmp_path / "b.duckdb"
    config = write_config(tmp_path, 'mode = "batch"\n' + CONFIG.replace("openai-chat:", "openai:"))
    submitted = judge_traces(db=str(db), config=str(config), table=str(table))
    assert submitted.counts["batches_submitted"] == 2 and len(provider.submitted) == 4
    pending = judge_collect(db=str(db), config=str(config))
    assert pending.counts["batches_pending"] == 2 and pending.counts["batches_collected"] == 0
    provider.finish()
    collected = judge_collect(db=str(db), config=str(config))
    assert collected.counts["batches_collected"] == 2 and collected.counts["submissions_ok"] == 2
    assert len(provider.submitted) == 4
    assert query_rows(db, "SELECT item_id, overall_score FROM latest_judge_scores ORDER BY 1") == [
        ("1", 70.0),
        ("2", 70.0),
    ]
    assert query_rows(db, "SELECT flow, status FROM runs ORDER BY run_seq") == [
        ("judge_traces", "completed"),
        ("judge_collect", "completed"),
        ("judge_collect", "completed"),
    ]


def test_the_collector_with_nothing_to_collect_completes_without_a_key(
    prefect_server: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scheduled judge-collect on a site that never submits batches: completed with a note,
    no key asked for, the database neither created nor written. Only a waiting batch needs the
    key, and then its absence fails the run (an operator must set it)."""
    from judge_helpers import FakeBatchProvider, fake_batch_model

    from pipelines.flows import judge_collect, judge_traces
    from pipelines.judge import batch
    from transforms.errors import MissingApiKeyError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = write_config(tmp_path, 'mode = "batch"\n' + CONFIG.replace("openai-chat:", "openai:"))
    db = tmp_path / "never.duckdb"
    report = judge_collect(db=str(db), config=str(config))
    assert report.status == "completed" and not report.failed
    assert "nothing to collect" in report.markdown and "never.duckdb" in report.markdown
    assert not db.exists()
    assert main(["judge", "--collect", "--db", str(db), "--config", str(config)]) == 0

    provider = FakeBatchProvider()
    monkeypatch.setattr(batch, "default_model_factory", lambda name: fake_batch_model(provider))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    table = tmp_path / "answers.csv"
    table.write_text("id,user_query,submission\n1,q,a\n", encoding="utf-8")
    judge_traces(db=str(db), config=str(config), table=str(table))
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(MissingApiKeyError):
        judge_collect(db=str(db), config=str(config))
    assert query_rows(db, "SELECT flow, status FROM runs ORDER BY run_seq") == [
        ("judge_traces", "completed")
    ]
