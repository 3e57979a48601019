"""configs/evaluator.toml: every rule of SPEC section 4, each with the message it gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from judge_helpers import BREVITY_METRIC

from storage.config_files import load_judge_config
from transforms.config.judge import BUILTIN_DEFAULTS
from transforms.errors import JudgeConfigError, MissingApiKeyError
from transforms.judge.environment import check_api_keys
from transforms.judge.metrics import ClarityCoherence, metric_class, snake_case

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "evaluator.toml"
    path.write_text(text, encoding="utf-8")
    return path


def load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    return load_judge_config(write(tmp_path, text), check_keys=False)


def error(tmp_path: Path, text: str) -> str:
    with pytest.raises(JudgeConfigError) as caught:
        load(tmp_path, text)
    return str(caught.value)


def test_the_shipped_example_loads() -> None:
    config = load_judge_config(ROOT / "configs" / "evaluator.toml", check_keys=False)
    assert [m.name for m in config.metrics] == [
        "ClarityCoherence",
        "Coverage",
        "Relevance",
        "LLMPlain",
    ]
    assert sum(m.weight for m in config.metrics) == pytest.approx(1.0)


def test_no_metrics_means_the_four_builtins_with_equal_weights(tmp_path: Path) -> None:
    config = load(tmp_path, "")
    assert [(m.name, m.weight) for m in config.metrics] == [
        ("ClarityCoherence", 0.25),
        ("Coverage", 0.25),
        ("Relevance", 0.25),
        ("LLMPlain", 0.25),
    ]
    assert {m.model for m in config.metrics} == {BUILTIN_DEFAULTS["model"]}
    assert {(m.temperature, m.max_tokens, m.max_retries) for m in config.metrics} == {
        (0.0, None, 3)
    }


def test_metrics_without_weights_get_equal_weights(tmp_path: Path) -> None:
    config = load(tmp_path, '[[metrics]]\nname = "Coverage"\n[[metrics]]\nname = "Relevance"\n')
    assert [m.weight for m in config.metrics] == [0.5, 0.5]


def test_class_name_and_snake_case_alias(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        '[[metrics]]\nname = "clarity_coherence"\nweight = 0.4\n'
        '[[metrics]]\nname = "LLMPlain"\nweight = 0.6\n',
    )
    assert [m.name for m in config.metrics] == ["ClarityCoherence", "LLMPlain"]
    assert snake_case("LLMPlain") == "llm_plain"
    assert metric_class("llm_plain").__name__ == "LLMPlain"


def test_resolution_metric_then_llm_default_then_builtin(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        '[llm_default]\nmodel = "openai:gpt-5"\ntemperature = 0.3\n'
        '[[metrics]]\nname = "Coverage"\nweight = 0.5\nmodel = "anthropic:claude-haiku-4-5"\n'
        "max_tokens = 256\nmax_retries = 1\n"
        '[[metrics]]\nname = "Relevance"\nweight = 0.5\ntemperature = 0.0\n',
    )
    coverage, relevance = config.metrics
    assert (coverage.model, coverage.temperature, coverage.max_tokens, coverage.max_retries) == (
        "anthropic:claude-haiku-4-5",
        0.3,
        256,
        1,
    )
    assert (relevance.model, relevance.temperature, relevance.max_tokens) == (
        "openai:gpt-5",
        0.0,
        None,
    )
    assert relevance.max_retries == 3


def test_default_model_at_top_level(tmp_path: Path) -> None:
    config = load(tmp_path, 'default_model = "openai:gpt-5"\n')
    assert {m.model for m in config.metrics} == {"openai:gpt-5"}


def test_default_model_and_llm_default_model_together(tmp_path: Path) -> None:
    message = error(
        tmp_path, 'default_model = "openai:gpt-5"\n[llm_default]\nmodel = "openai:gpt-4o"\n'
    )
    assert "default_model = 'openai:gpt-5'" in message
    assert "[llm_default] model = 'openai:gpt-4o'" in message
    assert "keep only one" in message


def test_system_instruction_replaces_the_builtin_prompt(tmp_path: Path) -> None:
    config = load(
        tmp_path, '[[metrics]]\nname = "ClarityCoherence"\nsystem_instruction = "Be strict."\n'
    )
    assert config.metrics[0].instruction == "Be strict."
    assert load(tmp_path, "").metrics[0].instruction == ClarityCoherence.instruction


def test_negative_weight(tmp_path: Path) -> None:
    message = error(
        tmp_path,
        '[[metrics]]\nname = "Coverage"\nweight = -0.2\n'
        '[[metrics]]\nname = "Relevance"\nweight = 1.2\n',
    )
    assert "metrics.0.weight: weight -0.2 is negative; use a weight >= 0" in message


def test_weights_not_summing_to_one(tmp_path: Path) -> None:
    message = error(
        tmp_path,
        '[[metrics]]\nname = "Coverage"\nweight = 0.5\n'
        '[[metrics]]\nname = "Relevance"\nweight = 0.4\n',
    )
    assert "metric weights sum to 0.9, expected 1.0 (Coverage=0.5, Relevance=0.4)" in message
    assert "remove every weight for equal weights" in message


def test_weights_for_some_metrics_only(tmp_path: Path) -> None:
    message = error(
        tmp_path, '[[metrics]]\nname = "Coverage"\nweight = 1.0\n[[metrics]]\nname = "Relevance"\n'
    )
    assert "weights are given for Coverage but not for Relevance" in message
    assert "give every metric a weight, or none for equal weights" in message


def test_negative_temperature(tmp_path: Path) -> None:
    message = error(tmp_path, '[[metrics]]\nname = "Coverage"\ntemperature = -0.5\n')
    assert "metrics.0.temperature: temperature -0.5 is negative; use a value >= 0.0" in message
    message = error(tmp_path, "[llm_default]\ntemperature = -1.0\n")
    assert "llm_default.temperature: temperature -1.0 is negative" in message


@pytest.mark.parametrize("value", [0, -5])
def test_max_tokens_not_positive(tmp_path: Path, value: int) -> None:
    message = error(tmp_path, f"[llm_default]\nmax_tokens = {value}\n")
    assert f"llm_default.max_tokens: max_tokens {value} is not positive" in message
    assert "use a whole number > 0" in message


def test_negative_max_retries(tmp_path: Path) -> None:
    message = error(tmp_path, '[[metrics]]\nname = "Relevance"\nmax_retries = -1\n')
    assert "metrics.0.max_retries: max_retries -1 is negative; use 0 (no retry) or more" in message


@pytest.mark.parametrize("model", ["gpt-5", ":gpt-5", "openai:", "nosuchprovider:x"])
def test_model_not_provider_colon_name(tmp_path: Path, model: str) -> None:
    message = error(tmp_path, f'[[metrics]]\nname = "Coverage"\nmodel = "{model}"\n')
    assert f"model {model!r}" in message
    assert "provider" in message


def test_bad_default_model(tmp_path: Path) -> None:
    message = error(tmp_path, 'default_model = "claude"\n')
    assert "default_model: model 'claude' must read 'provider:model-name'" in message


def test_unknown_metric_lists_the_available_ones(tmp_path: Path) -> None:
    message = error(tmp_path, '[[metrics]]\nname = "Fluency"\n')
    assert "metrics.0.name: unknown metric 'Fluency'" in message
    for name in ("ClarityCoherence (clarity_coherence)", "Coverage", "Relevance", "LLMPlain"):
        assert name in message
    assert "'module:Class'" in message


def test_unknown_keys_are_errors(tmp_path: Path) -> None:
    message = error(tmp_path, '[[metrics]]\nname = "Coverage"\nwieght = 1.0\n')
    assert "metrics.0.wieght: unknown key; remove it or check its spelling" in message
    message = error(tmp_path, "[llm_default]\ntemprature = 0.1\n")
    assert "llm_default.temprature: unknown key" in message


def test_singular_metric_section_is_named(tmp_path: Path) -> None:
    message = error(tmp_path, '[[metric]]\nname = "Coverage"\n')
    assert "write [[metrics]] (plural)" in message


def test_metric_listed_twice(tmp_path: Path) -> None:
    message = error(tmp_path, '[[metrics]]\nname = "Coverage"\n[[metrics]]\nname = "coverage"\n')
    assert "metric Coverage is listed more than once" in message


def test_missing_file_and_bad_toml(tmp_path: Path) -> None:
    with pytest.raises(JudgeConfigError, match="does not exist"):
        load_judge_config(tmp_path / "nope.toml")
    with pytest.raises(JudgeConfigError, match="is not valid TOML"):
        load(tmp_path, "[[metrics]\n")


def test_missing_api_key_names_the_variable(tmp_path: Path) -> None:
    path = write(tmp_path, '[[metrics]]\nname = "Coverage"\nmodel = "openai:gpt-5"\n')
    with pytest.raises(MissingApiKeyError) as caught:
        load_judge_config(path, environ={})
    assert caught.value.variable == "OPENAI_API_KEY"
    assert "environment variable OPENAI_API_KEY, which is not set" in str(caught.value)
    assert "export OPENAI_API_KEY=..." in str(caught.value)
    load_judge_config(path, environ={"OPENAI_API_KEY": "sk-test"})
    # An OpenAI-compatible local server needs no key.
    load_judge_config(path, environ={"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"})
    default = load_judge_config(None, check_keys=False)
    with pytest.raises(MissingApiKeyError, match="ANTHROPIC_API_KEY"):
        check_api_keys(default, {})


def test_custom_metric_by_module_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "brevity_metrics.py").write_text(BREVITY_METRIC, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    config = load(
        tmp_path,
        '[[metrics]]\nname = "brevity_metrics:Brevity"\nweight = 0.5\nmodel = "openai:gpt-5"\n'
        "temperature = 0.7\n"
        '[[metrics]]\nname = "Coverage"\nweight = 0.5\n',
    )
    brevity = config.metrics[0]
    assert brevity.name == "Brevity"
    # LLM parameters given to a non-LLM metric are ignored.
    assert (brevity.model, brevity.temperature) == (None, None)
    assert brevity.metric.score("q", "abc").score == 97.0
    # Once imported, the class is known by its name too.
    assert metric_class("brevity") is type(brevity.metric)


def test_custom_metric_that_is_not_a_metric(tmp_path: Path) -> None:
    message = error(tmp_path, '[[metrics]]\nname = "pathlib:Path"\n')
    assert "'pathlib:Path' is not a metric; subclass tracegrade.judge.BaseMetric" in message
    message = error(tmp_path, '[[metrics]]\nname = "no_such_module_xyz:Thing"\n')
    assert "cannot be imported" in message


def test_the_readme_custom_metric(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = readme.split("# my_metrics.py\n", 1)[1].split("```", 1)[0]
    assert len(code.strip().splitlines()) < 15
    (tmp_path / "my_metrics.py").write_text(code, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    config = load(tmp_path, '[[metrics]]\nname = "my_metrics:Brevity"\n')
    assert config.metrics[0].metric.score("q", "x" * 100).score == 90.0
