"""Every scoring run against the one before it, where the configuration has a gate: version 2
of an agent delivered the night after version 1, failing more of the same tasks. The run's
summary says REGRESSION; under Prefect the check is a failed task run of a completed flow
run, with the whole comparison as an artifact; without a gate nothing is compared."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tracegrade.cli import main
from transforms.synth.traces import synthetic_traces, to_json_records

GATE = '[compare]\nfail_on = ["success < -0.03", "score < -0.5"]\n'


def _nights(folder: Path) -> tuple[Path, Path]:
    """Two nights' exports: version 1's runs, then version 2's of the same tasks."""
    rng = random.Random(2)
    first, second = [], []
    for record in to_json_records(synthetic_traces(400, seed=9)):
        old = json.loads(json.dumps(record, default=str))
        old["metadata"]["agent_id"] = "bot"
        new = json.loads(json.dumps(old))
        new["id"] = old["id"].replace("kp:trace:", "kp:trace:n2-")
        if old["metadata"]["success"] and rng.random() < 0.15:
            new["metadata"]["success"] = False
        first.append(json.dumps(old))
        second.append(json.dumps(new))
    paths = []
    for night, lines in (("night-1", first), ("night-2", second)):
        path = folder / night / "day.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    return paths[0], paths[1]


def test_a_night_worse_than_the_one_before_says_regression_in_its_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = _nights(tmp_path)
    config = tmp_path / "tracegrade.toml"
    config.write_text(GATE)
    db = str(tmp_path / "t.duckdb")
    score = ["--db", db, "--no-embedder", "--config", str(config)]

    assert main(["score", str(first), *score]) == 0
    alone = capsys.readouterr().out
    assert main(["score", str(second), *score]) == 0  # the run completed: its exit says so
    said = capsys.readouterr().out

    assert "this run against the previous one" not in alone  # no earlier run to compare with
    section = said.split("# tracegrade compare: this run against the previous one")[1]
    assert "run:2 (400 traces) against run:1 (400 traces), compared as paired by objective" in (
        section
    )
    assert "FAIL  success < -0.03" in section and "pass  score < -0.5" in section
    assert section.strip().splitlines()[-1] == "verdict: REGRESSION (1 of 2 lines: success < -0.03)"


def test_without_a_gate_a_run_compares_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = _nights(tmp_path)
    db = str(tmp_path / "t.duckdb")
    for night in (first, second):
        assert main(["score", str(night), "--db", db, "--no-embedder"]) == 0

    assert "tracegrade compare" not in capsys.readouterr().out


def test_under_prefect_the_check_fails_and_the_flow_run_completes(
    prefect_server: None, tmp_path: Path
) -> None:
    from prefect import get_client
    from prefect.artifacts import Artifact
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    from pipelines.flows import score_traces

    first, second = _nights(tmp_path)
    config = tmp_path / "tracegrade.toml"
    config.write_text(GATE)
    db = str(tmp_path / "t.duckdb")
    score_traces([str(first)], db=db, config=str(config), no_embedder=True)

    state = score_traces(
        [str(second)], db=db, config=str(config), no_embedder=True, return_state=True
    )

    assert state.is_completed()
    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(
            flow_run_filter=FlowRunFilter(
                id=FlowRunFilterId(any_=[state.state_details.flow_run_id])
            )
        )
    checks = [run for run in runs if run.name.startswith("check against the previous run")]
    assert len(checks) == 1 and checks[0].state is not None and checks[0].state.is_failed()
    artifact = Artifact.get("compare-previous-run")
    assert artifact is not None and "verdict: REGRESSION" in str(artifact.data)


def test_a_gate_the_nights_cannot_answer_leaves_the_run_stored_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = _nights(tmp_path)
    config = tmp_path / "tracegrade.toml"
    config.write_text('[compare]\nfail_on = ["judge.Relevance < -5"]\n')  # nothing was judged
    db = str(tmp_path / "t.duckdb")
    score = ["--db", db, "--no-embedder", "--config", str(config)]
    assert main(["score", str(first), *score]) == 0

    assert main(["score", str(second), *score]) == 0
    said = capsys.readouterr().out

    assert (
        "The run was not compared with the previous one: --fail-on names 'judge.Relevance'" in said
    )
