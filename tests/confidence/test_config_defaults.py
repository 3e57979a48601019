"""The defaults that light commands read without loading the configuration models
(transforms/config/defaults.py) are the models' own."""

from __future__ import annotations

from transforms.config.confidence import ConfidenceConfig
from transforms.config.defaults import DEFAULT_CONFIDENCE_HASH, DEFAULT_ENGINE
from transforms.config.scoring import ScoringFile


def test_the_default_confidence_hash_is_the_default_configurations() -> None:
    assert ConfidenceConfig().config_hash == DEFAULT_CONFIDENCE_HASH, (
        "the default confidence configuration changed: set DEFAULT_CONFIDENCE_HASH in "
        "transforms/config/defaults.py to its new hash"
    )


def test_the_default_engine_is_the_default_settings() -> None:
    assert ScoringFile().execution.engine == DEFAULT_ENGINE
