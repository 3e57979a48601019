"""`tracegrade judge --check` on the configuration files of the original evaluator's test suite
(mixseek/mixseek-core: tests/fixtures/evaluator_configs, the inline configurations of
tests/evaluator and tests/unit/config), copied in tests/judge/cases/mixseek/: the outcome each
file's original test expects, or a difference that docs/judge.md lists with its reason."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tracegrade.cli import main

ROOT = Path(__file__).resolve().parents[2]
CASES_DIR = Path(__file__).parent / "cases" / "mixseek"
DIFFERENCES = (
    (ROOT / "docs" / "judge.md")
    .read_text(encoding="utf-8")
    .split("## Differences from the original evaluator", 1)[1]
    .split("\n## ", 1)[0]
)


@dataclass(frozen=True)
class Case:
    """What the original's tests expect of a file, and what `--check` gives."""

    original: str
    """The outcome the original's test expects."""
    code: int
    """The exit status of `tracegrade judge --check` (0 valid, 2 refused)."""
    shows: tuple[str, ...]
    """Fragments of the output (stdout when valid, stderr when refused)."""
    differs: str | None = None
    """The first cell of the row of docs/judge.md's differences table that explains a
    different outcome; None when the outcome is the original's."""


OK_3 = ("ClarityCoherence: weight 0.4;", "Coverage: weight 0.3;", "Relevance: weight 0.3;")
FOUR = tuple(f"{name}: weight 0.25;" for name in ("ClarityCoherence", "Coverage", "Relevance"))
ANTHROPIC = "model anthropic:claude-sonnet-4-5-20250929"

CASES = {
    "fixture_valid_config.toml": Case(
        "loads (evaluate() then fails on the snake_case names)",
        0,
        (*OK_3, "Relevance: weight 0.3; model openai:gpt-5", "max_retries 3"),
        differs="metric names",
    ),
    "fixture_invalid_weights.toml": Case(
        "ValidationError: weights must sum to 1.0, got 1.3000", 2, ("weights sum to 1.3",)
    ),
    "fixture_invalid_model_format.toml": Case(
        "ValidationError: Invalid model format", 2, ("default_model", "'provider:model-name'")
    ),
    "fixture_missing_metrics.toml": Case(
        "ValidationError: metrics needs at least 1 item",
        0,
        FOUR,
        differs="a file without `[[metrics]]`",
    ),
    "conftest_valid_config.toml": Case("loads", 0, (*OK_3, "Relevance: weight 0.3; model openai")),
    "conftest_invalid_weights.toml": Case(
        "ValidationError mentioning weight", 2, ("weights sum to 1.3",)
    ),
    "conftest_invalid_model_format.toml": Case(
        "ValidationError mentioning model/format", 2, ("llm_default.model", "provider:model-name")
    ),
    "conftest_missing_metrics.toml": Case(
        "ValidationError mentioning metric", 0, FOUR, differs="a file without `[[metrics]]`"
    ),
    "conftest_custom_weights.toml": Case(
        "loads; Relevance .5, ClarityCoherence .3, Coverage .2",
        0,
        ("Relevance: weight 0.5;", "ClarityCoherence: weight 0.3;", "Coverage: weight 0.2;"),
    ),
    "conftest_two_metrics.toml": Case(
        "loads; only the two listed metrics",
        0,
        ("ClarityCoherence: weight 0.6;", "Relevance: weight 0.4;"),
    ),
    "us2_per_metric_model_override.toml": Case(
        "Coverage takes the top-level default_model",
        0,
        (f"Coverage: weight 0.3; {ANTHROPIC}", "Relevance: weight 0.3; model openai:gpt-5"),
    ),
    "us2_duplicate_metric_names.toml": Case(
        "ValidationError: duplicate or unique", 2, ("duplicate", "ClarityCoherence")
    ),
    "custom_unregistered_metric.toml": Case(
        "ValueError at evaluate(): technical_accuracy not found",
        2,
        ("technical_accuracy", "not found"),
        differs="metric names",
    ),
    "custom_metrics_table.toml": Case(
        "loads; the rule-based metric beside an LLM one",
        0,
        ("ClarityCoherence: weight 0.5;", "length_based: weight 0.5; no LLM"),
    ),
    "unit_config_valid.toml": Case(
        "loads with temperature 0.0 and max_tokens 2000",
        0,
        ("temperature 0.0, max_tokens 2000, max_retries 3",),
    ),
    "unit_weights_within_tolerance_low.toml": Case("loads (0.9995)", 0, ("weight 0.4995;",)),
    "unit_weights_within_tolerance_high.toml": Case("loads (1.0005)", 0, ("weight 0.5005;",)),
    "issue_weights_thirds.toml": Case("loads (0.999)", 0, ("Relevance: weight 0.333;",)),
    "unit_weights_not_summing.toml": Case(
        "ValidationError: weight, sum or 0.8", 2, ("weights sum to 0.8",)
    ),
    "unit_weights_mixed_none.toml": Case(
        "ValidationError: weight (重み)", 2, ("weights are given for ClarityCoherence",)
    ),
    "unit_weights_all_none.toml": Case("equal weights of 1/3", 0, ("Coverage: weight 0.333333;",)),
    "unit_weight_below_zero.toml": Case("ValidationError: weight", 2, ("weight -0.1",)),
    "unit_weight_above_one.toml": Case("ValidationError: weight", 2, ("weights sum to 1.1",)),
    "unit_name_empty.toml": Case("ValidationError: name", 2, ("metrics.0.name",)),
    "unit_name_whitespace.toml": Case("ValidationError: name", 2, ("metrics.0.name",)),
    "unit_name_normalization.toml": Case("the name stripped", 0, ("ClarityCoherence: weight 1;",)),
    "unit_model_empty_provider.toml": Case(
        "ValidationError: provider or format", 2, ("':model-name'", "provider:model-name")
    ),
    "unit_model_empty_name.toml": Case(
        "ValidationError: model or format", 2, ("'anthropic:'", "provider:model-name")
    ),
    "unit_model_custom_provider.toml": Case(
        "loads: no list of providers at configuration level",
        2,
        ("names provider 'custom', which is not known",),
        differs="providers",
    ),
    "unit_model_other_formats.toml": Case(
        "loads", 0, (f"Coverage: weight 0.5; {ANTHROPIC}", "model openai:gpt-5")
    ),
    "unit_negative_max_retries.toml": Case(
        "ValidationError: max_retries", 2, ("max_retries -1 is negative",)
    ),
    "unit_empty_metrics_list.toml": Case(
        "ValidationError: metrics", 2, ("metrics is an empty list",)
    ),
    "unit_invalid_toml.toml": Case(
        "TOMLDecodeError: toml, syntax or expected", 2, ("not valid TOML", "Expected")
    ),
    "settings_temperature_above_two.toml": Case(
        "ValidationError for EvaluatorSettings (temperature <= 2)",
        2,
        ("temperature 2.5 is above 2.0",),
    ),
    "settings_metric_temperature_five.toml": Case(
        "loads (a metric's temperature is only >= 0)",
        2,
        ("temperature 5.0 is above 2.0",),
        differs="temperature of a metric",
    ),
    "settings_llm_default_top_p_out_of_range.toml": Case(
        "loads: its loader drops [llm_default] top_p",
        2,
        ("top_p 1.5 is outside 0.0 to 1.0",),
        differs="`top_p`, `seed`, `stop_sequences` in `[llm_default]`",
    ),
    "settings_sampling_parameters.toml": Case(
        "loads; each parameter reaches the model settings",
        0,
        ("timeout_seconds 60.0, top_p 0.9, seed 42, stop_sequences ['END']",),
    ),
    "settings_stop_sequences_string.toml": Case(
        "ValidationError: Input should be a valid list", 2, ("valid list",)
    ),
    "settings_seed_float.toml": Case("ValidationError: int_from_float", 2, ("fractional part",)),
    "settings_default_model_twice.toml": Case(
        "loads: [llm_default] model wins",
        2,
        ("keep only one",),
        differs="`default_model` (or `max_retries`, `timeout_seconds`) at the top level and in "
        "`[llm_default]`",
    ),
    "settings_blank_default_model.toml": Case(
        "loads: falls back to google-gla:gemini-2.5-flash",
        2,
        ("model '' must read 'provider:model-name'",),
        differs='`[llm_default] model = ""`',
    ),
    "settings_top_level_temperature.toml": Case(
        "loads: a top-level temperature is ignored",
        2,
        ("temperature at the top level is not read", "move it into [llm_default]"),
        differs="`temperature`, `max_tokens`, `top_p`, `seed`, `stop_sequences` at the top level",
    ),
}


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The original's mock_all_api_keys fixture: both providers' keys set."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key-12345")
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key-67890")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_every_case_file_has_an_expectation() -> None:
    assert sorted(path.name for path in CASES_DIR.glob("*.toml")) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_check_gives_what_the_original_tests_expect(
    name: str, keys: None, capsys: pytest.CaptureFixture[str]
) -> None:
    case = CASES[name]
    code = main(["judge", "--check", "--config", str(CASES_DIR / name)])
    captured = capsys.readouterr()
    assert code == case.code, captured.err
    shown = captured.out if code == 0 else captured.err
    for fragment in case.shows:
        assert fragment in shown
    if case.differs is not None:
        assert f"\n| {case.differs} |" in DIFFERENCES


def test_no_configuration_file_in_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keys: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """test_evaluator_us2.py, missing_config_uses_default_configuration: a workspace with
    configs/ but no evaluator.toml uses the defaults (three metrics there, four here)."""
    (tmp_path / "configs").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(["judge", "--check"]) == 0
    out = capsys.readouterr().out
    assert "no configuration file (configs/evaluator.toml does not exist)" in out
    assert "max_retries 3" in out
    for fragment in FOUR:
        assert fragment in out
    assert "\n| no configuration file |" in DIFFERENCES
