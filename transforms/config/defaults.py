"""What the default configurations decide, for the commands that must know it before they load
the models: pydantic and the models take a quarter of a second to import, which a rerun with
nothing to do (it only compares hashes) should not pay. tests/confidence/test_config_defaults.py fails
when a model's defaults change and these do not."""

from __future__ import annotations

__all__ = ["DEFAULT_CONFIDENCE_HASH", "DEFAULT_ENGINE"]

DEFAULT_CONFIDENCE_HASH = "8b22d1bdc4dde0b7"
"""`ConfidenceConfig().config_hash`: the hash stored with every level computed from the
default confidence configuration."""

DEFAULT_ENGINE = "local"
"""`ScoringFile().execution.engine`: where a run without a configuration file scores."""
