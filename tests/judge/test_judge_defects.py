"""The defects issue 22 found in the judge, each pinned by a test that failed before its fix:
a provider whose package is missing, a custom metric that returns None or raises, the README's
custom metric loaded from the working directory, the unknown-provider message, and the files
written for the original MixSeek evaluator."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from judge_helpers import block_module, counting_model, items, judge_once, write_config

from pipelines.judge.calls import judgement_request
from storage.config_files import load_judge_config
from tracegrade.cli import main
from transforms.errors import JudgeConfigError

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "evaluator.toml"
    path.write_text(text, encoding="utf-8")
    return path


def check(path: Path | str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["judge", "--check", "--config", str(path)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    ("model", "module", "variable", "package"),
    [
        ("google:gemini-pro", "google.genai", "GOOGLE_API_KEY", "pydantic-ai-slim[google]"),
        (
            "google-gla:gemini-2.5-flash",
            "google.genai",
            "GOOGLE_API_KEY",
            "pydantic-ai-slim[google]",
        ),
        ("google-vertex:gemini-2.5-flash", "google.genai", None, "pydantic-ai-slim[google]"),
        ("groq:llama-3.3-70b-versatile", "groq", "GROQ_API_KEY", "pydantic-ai-slim[groq]"),
    ],
)
def test_check_names_the_missing_provider_package_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    model: str,
    module: str,
    variable: str | None,
    package: str,
) -> None:
    block_module(monkeypatch, module)
    if variable is not None:
        monkeypatch.setenv(variable, "test-key-0123456789abcdef")
    path = write(tmp_path, f'[[metrics]]\nname = "Coverage"\nmodel = "{model}"\n')
    code, _, err = check(path, capsys)
    assert code == 2
    assert package in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    with pytest.raises(JudgeConfigError) as caught:
        load_judge_config(path)
    assert getattr(caught.value, "package", None) == package


@pytest.mark.parametrize(
    "model",
    [
        "google-gla:gemini-2.5-flash",  # the original evaluator's default model
        "google-vertex:gemini-2.5-flash",
        "anthropic:claude-sonnet-4-5-20250929",
        "openai:gpt-5",
    ],
)
def test_check_passes_for_the_original_evaluators_providers_as_installed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str
) -> None:
    """Issue 42: the providers the original evaluator accepts need no install step beyond the
    project's own (`make install`): `judge --check` passes and names the package installed."""
    path = write(tmp_path, f'[llm_default]\nmodel = "{model}"\n')
    code, out, err = check(path, capsys)
    assert (code, err) == (0, ""), err
    assert f"{model} (metrics " in out and "provider package installed" in out


BROKEN_METRICS = """\
from tracegrade.judge import BaseMetric


class ReturnsNone(BaseMetric):
    def score(self, user_query, submission):
        return None


class Raises(BaseMetric):
    def score(self, user_query, submission):
        raise RuntimeError("the metric's own bug")
"""


@pytest.mark.parametrize(
    ("name", "error"),
    [("ReturnsNone", "returned None"), ("Raises", "RuntimeError: the metric's own bug")],
)
def test_a_broken_custom_metric_fails_that_metric_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, error: str
) -> None:
    import duckdb

    (tmp_path / "broken_metrics.py").write_text(BROKEN_METRICS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    model, seen = counting_model()
    config = write_config(
        tmp_path,
        f'[[metrics]]\nname = "broken_metrics:{name}"\nweight = 0.5\n'
        '[[metrics]]\nname = "Coverage"\nweight = 0.5\nmodel = "openai:gpt-5"\n',
    )
    db = tmp_path / "j.duckdb"
    result = judge_once(db, config, items([("a", "q", "one"), ("b", "q", "two")]), model=model)
    assert result.failed and len(seen) == 2
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "SELECT item_id, metric, status, error FROM judge_results ORDER BY 1, 2"
        ).fetchall()
        scores = con.execute(
            "SELECT item_id, status, failed_metrics FROM latest_judge_scores ORDER BY 1"
        ).fetchall()
    finally:
        con.close()
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("a", "Coverage", "ok"),
        ("a", name, "metric_error"),
        ("b", "Coverage", "ok"),
        ("b", name, "metric_error"),
    ]
    assert error in str(rows[1][3])
    assert scores == [("a", "failed", [name]), ("b", "failed", [name])]


def test_a_custom_llm_metric_whose_prompt_raises_fails_only_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import duckdb

    from tracegrade.evaluator import CustomMetricError, EvaluationRequest, Evaluator

    (tmp_path / "prompt_metrics.py").write_text(
        "from tracegrade.judge import LLMJudgeMetric\n"
        "class BadPrompt(LLMJudgeMetric):\n"
        "    instruction = 'Judge it.'\n"
        "    def user_prompt(self, user_query, submission):\n"
        "        raise KeyError('template field')\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    model, seen = counting_model()
    config = write_config(
        tmp_path,
        '[llm_default]\nmodel = "openai:gpt-5"\n[[metrics]]\nname = "prompt_metrics:BadPrompt"\n'
        '[[metrics]]\nname = "Coverage"\n',
    )
    db = tmp_path / "j.duckdb"
    assert judge_once(db, config, items([("a", "q", "one")]), model=model).failed
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT metric, status, error FROM judge_results ORDER BY 1").fetchall()
    finally:
        con.close()
    assert rows == [
        ("BadPrompt", "metric_error", "KeyError: 'template field'"),
        ("Coverage", "ok", None),
    ]
    with pytest.raises(CustomMetricError, match="BadPrompt: metric_error: KeyError"):
        Evaluator(config, model=model).evaluate(EvaluationRequest(user_query="q", submission="a"))


README_CONFIG = '[[metrics]]\nname = "my_metrics:Brevity"\n'


def test_the_readme_custom_metric_loads_from_the_working_directory(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = readme.split("# my_metrics.py\n", 1)[1].split("```", 1)[0]
    (tmp_path / "my_metrics.py").write_text(code, encoding="utf-8")
    (tmp_path / "evaluator.toml").write_text(README_CONFIG, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # The console script, as a user runs it: Python puts its folder on sys.path, not the
    # working directory (-P does the same for `python -m`).
    script = Path(sys.executable).with_name("tracegrade")
    command = (
        [str(script)] if script.exists() else [sys.executable, "-P", "-m", "tracegrade.cli.main"]
    )
    done = subprocess.run(
        [*command, "judge", "--check", "--config", "evaluator.toml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Brevity: weight 1; no LLM" in done.stdout


def test_unknown_provider_lists_only_accepted_providers(tmp_path: Path) -> None:
    with pytest.raises(JudgeConfigError) as caught:
        load_judge_config(
            write(tmp_path, '[[metrics]]\nname = "Coverage"\nmodel = "nosuchprovider:x"\n'),
            check_keys=False,
        )
    message = str(caught.value)
    listed = message.split("use one of ", 1)[1].split(";", 1)[0].split(", ")
    assert "google-gla" in listed and "openai" in listed
    for provider in listed:
        path = write(tmp_path, f'[[metrics]]\nname = "Coverage"\nmodel = "{provider}:some-model"\n')
        assert (
            load_judge_config(path, check_keys=False).metrics[0].model == f"{provider}:some-model"
        )


def test_google_gla_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path, '[llm_default]\nmodel = "google-gla:gemini-2.5-flash"\n')
    config = load_judge_config(path, check_keys=False)
    assert config.models == ["google-gla:gemini-2.5-flash"]


def test_top_level_legacy_keys_of_the_original(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'default_model = "openai:gpt-5"\nmax_retries = 5\ntimeout_seconds = 30\n'
        '[[metrics]]\nname = "Coverage"\n',
    )
    (metric,) = load_judge_config(path, check_keys=False).metrics
    assert (metric.model, metric.max_retries, metric.timeout_seconds) == ("openai:gpt-5", 5, 30)


def test_weights_summing_within_a_thousandth(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "".join(
            f'[[metrics]]\nname = "{name}"\nweight = 0.333\n'
            for name in ("ClarityCoherence", "Coverage", "Relevance")
        ),
    )
    config = load_judge_config(path, check_keys=False)
    assert [m.weight for m in config.metrics] == [0.333, 0.333, 0.333]


def test_sampling_parameters_per_metric_and_by_default_reach_the_model(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "[llm_default]\ntop_p = 0.9\nseed = 7\nstop_sequences = ['END']\ntimeout_seconds = 40\n"
        '[[metrics]]\nname = "Coverage"\ntop_p = 0.5\nseed = 11\nstop_sequences = ["STOP"]\n'
        "timeout_seconds = 20\n"
        '[[metrics]]\nname = "Relevance"\n',
    )
    coverage, relevance = load_judge_config(path, check_keys=False).metrics
    _, settings, _ = judgement_request(coverage, "q", "a", timeout_s=120.0)
    assert (settings["top_p"], settings["seed"], settings["stop_sequences"]) == (0.5, 11, ["STOP"])
    assert settings["timeout"] == 20
    _, settings, _ = judgement_request(relevance, "q", "a", timeout_s=120.0)
    assert (settings["top_p"], settings["seed"], settings["stop_sequences"]) == (0.9, 7, ["END"])
    assert settings["timeout"] == 40


def test_metric_names_are_stripped(tmp_path: Path) -> None:
    path = write(tmp_path, '[[metrics]]\nname = "  Coverage  "\n')
    assert [m.name for m in load_judge_config(path, check_keys=False).metrics] == ["Coverage"]


@pytest.mark.parametrize("table", ["[llm_default]\n", '[[metrics]]\nname = "Coverage"\n'])
def test_temperature_above_two_is_refused(tmp_path: Path, table: str) -> None:
    with pytest.raises(JudgeConfigError, match=r"temperature 2\.5 is above 2\.0"):
        load_judge_config(write(tmp_path, table + "temperature = 2.5\n"), check_keys=False)


@pytest.mark.parametrize("how", [[], ["--config", "none"]])
def test_no_configuration_file_means_the_four_builtins_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    how: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert main(["judge", "--check", *how]) == 0
    out = capsys.readouterr().out
    notes = [line for line in out.splitlines() if "four built-in metrics" in line]
    assert len(notes) == 1
    assert "equal weights" in notes[0]
    for name in ("ClarityCoherence", "Coverage", "Relevance", "LLMPlain"):
        assert f"  {name}: weight 0.25;" in out
    assert main(["judge", "--db", str(tmp_path / "x.duckdb"), "--dry-run", *how]) == 0
    out = capsys.readouterr().out
    assert len([line for line in out.splitlines() if "four built-in metrics" in line]) == 1


def test_the_nightly_step_skips_the_judge_when_the_provider_package_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.judge.flow import judge_after_scoring

    block_module(monkeypatch, "groq")
    monkeypatch.setenv("GROQ_API_KEY", "test-key")
    path = write(tmp_path, '[llm_default]\nmodel = "groq:llama-3.3-70b-versatile"\n')
    report = judge_after_scoring(str(tmp_path / "n.duckdb"), str(path))
    assert report.status == "skipped"
    assert "the package of provider groq is missing: install pydantic-ai-slim[groq]" in (
        report.markdown
    )
