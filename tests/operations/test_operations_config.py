"""Scorer-set configuration: presets, TOML files, custom classes and the errors they raise."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.config_files import load_operations_settings, load_scorer_set
from transforms.config.operations import PRESETS
from transforms.errors import ConfigError
from transforms.operations import ResponseTimeScorer

ROOT = Path(__file__).resolve().parents[2]


def table(config_name: str) -> list[tuple[str, float, float]]:
    scorers = load_scorer_set(None, config_name).scorer_set.scorers
    return [(s.name, s.weight, s.threshold) for s in scorers]


def test_the_seeds_presets() -> None:
    assert table("standard") == [
        ("operation-accuracy", 1.0, 0.8),
        ("target-block-precision", 1.0, 0.75),
        ("content-quality", 1.0, 0.6),
    ]
    assert table("strict") == [
        ("operation-accuracy", 1.0, 0.9),
        ("target-block-precision", 1.0, 0.9),
        ("content-quality", 1.0, 0.8),
        ("anti-hallucination", 2.0, 1.0),
    ]
    assert table("operation-focused") == [
        ("operation-accuracy", 2.0, 0.9),
        ("target-block-precision", 1.5, 0.85),
        ("content-quality", 0.5, 0.5),
    ]
    assert table("all") == [
        ("operation-accuracy", 1.0, 0.8),
        ("target-block-precision", 1.0, 0.75),
        ("content-quality", 1.0, 0.6),
        ("operation-result", 1.0, 0.8),
        ("anti-hallucination", 1.0, 1.0),
    ]
    assert load_scorer_set().name == "standard"


def test_the_shipped_file_loads_every_set() -> None:
    path = ROOT / "configs" / "scorers.toml"
    settings = load_operations_settings(path)
    for name in settings.all_sets():
        config = load_scorer_set(path, name)
        assert config.name == name and len(config.config_hash) == 16
    latency = load_scorer_set(path, "standard-with-latency").scorer_set.scorers
    assert latency[3].threshold == 1.0  # anti-hallucination's seed threshold by default
    assert isinstance(latency[4].scorer, ResponseTimeScorer)
    assert latency[4].scorer.max_acceptable_ms == 3000


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scorers.toml"
    path.write_text(text)
    return path


CUSTOM = (
    'name = "latency", class = "transforms.operations.custom:ResponseTimeScorer", threshold = 0.5'
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'default_set = "nope"',
            "(top level): default_set 'nope' is not a set; use one of standard",
        ),
        (
            '[sets.strict]\nscorers = [{ type = "content-quality" }]',
            "sets strict are built-in presets",
        ),
        ("[sets.x]\nscorers = []", "sets.x.scorers = []: List should have at least 1 item"),
        (
            '[sets.x]\nscorers = [{ type = "accuracy" }]',
            "type 'accuracy' is not a built-in scorer; use one of operation-accuracy",
        ),
        (
            "[sets.x]\nscorers = [{ weight = 1.0 }]",
            "give either type (a built-in scorer) or class (a custom one)",
        ),
        (
            '[sets.x]\nscorers = [{ type = "content-quality", class = "a:B" }]',
            "give either type (a built-in scorer) or class (a custom one)",
        ),
        (
            '[sets.x]\nscorers = [{ class = "nomodule" , name = "n", threshold = 0.5}]',
            "must read 'module:Class'",
        ),
        (
            '[sets.x]\nscorers = [{ class = "a:B" }]',
            "custom scorer 'a:B' needs a name and a threshold",
        ),
        (
            '[sets.x]\nscorers = [{ type = "content-quality", threshold = 1.5 }]',
            "threshold = 1.5: Input should be less than or equal to 1",
        ),
        (
            '[sets.x]\nscorers = [{ type = "content-quality", weight = 0.0 }]',
            "weights sum to 0.0; give at least one scorer a positive weight",
        ),
        (
            '[sets.x]\nscorers = [{ type = "content-quality" }, { type = "content-quality" }]',
            "scorer names content-quality appear more than once",
        ),
        (
            '[sets.x]\nscorers = [{ type = "content-quality", option = 1 }]',
            "sets.x.scorers.0.option: unknown key",
        ),
        (
            '[sets.x]\nscorers = [{ type = "content-quality", options = { a = 1 } }]',
            "options apply to custom scorers only",
        ),
        ("this is not toml", "is not valid TOML"),
    ],
)
def test_invalid_files_say_what_and_how_to_fix(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_scorer_set(write(tmp_path, text))
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            '{ name = "n", class = "no_such_module:X", threshold = 0.5 }',
            "class 'no_such_module:X' cannot be imported",
        ),
        (
            '{ name = "n", class = "transforms.operations.custom:Nope", threshold = 0.5 }',
            "cannot be imported",
        ),
        (
            "{ " + CUSTOM + ", options = { max_acceptable_ms = -1 } }",
            "failed: ValueError: max_acceptable_ms must be positive, got -1; fix its options",
        ),
        ("{ " + CUSTOM + ", options = { limit = 3 } }", "failed: TypeError"),
        (
            '{ name = "n", class = "pathlib:PurePath", threshold = 0.5 }',
            "has no score(actual, expected) and details(actual, expected)",
        ),
    ],
)
def test_custom_classes_are_checked_before_any_work(
    tmp_path: Path, entry: str, message: str
) -> None:
    path = write(tmp_path, f"[sets.x]\nscorers = [{entry}]")
    with pytest.raises(ConfigError) as caught:
        load_scorer_set(path, "x")
    assert "set 'x', scorer 0 (n" in str(caught.value) or "latency" in str(caught.value)
    assert message in str(caught.value)


def test_custom_class_beside_the_configuration_file(tmp_path: Path) -> None:
    (tmp_path / "my_scorers_for_test.py").write_text(
        "class Always:\n"
        "    def __init__(self, value=1.0):\n        self.value = value\n"
        "    def score(self, actual, expected):\n        return self.value\n"
        "    def details(self, actual, expected):\n        return {'value': self.value}\n"
    )
    path = write(
        tmp_path,
        '[sets.x]\nscorers = [{ name = "always", class = "my_scorers_for_test:Always", '
        "threshold = 0.5, options = { value = 0.75 } }]",
    )
    (spec,) = load_scorer_set(path, "x").scorer_set.scorers
    assert spec.name == "always" and spec.scorer.value == 0.75  # type: ignore[union-attr]


def test_unknown_set_lists_the_sets(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError,
        match="scorer set 'fast' does not exist; use one of standard, strict, operation-focused, all",
    ):
        load_scorer_set(None, "fast")
    with pytest.raises(ConfigError, match="does not exist"):
        load_scorer_set(tmp_path / "missing.toml")


def test_presets_are_frozen() -> None:
    assert set(PRESETS) == {"standard", "strict", "operation-focused", "all"}
