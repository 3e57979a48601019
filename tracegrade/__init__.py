"""tracegrade: batch scoring of AI-agent reasoning traces.

The public API: the SDK's single-trace scorer (`evaluate_value`, `VectorCache`) and the
scoring configuration (`ScoringFile`, the model of tracegrade.toml). The names are imported on
first use, so that `tracegrade` (the command line) starts without loading what it does not
run.

Renamed, kept one release under the old name with a DeprecationWarning: `Settings` is
`ScoringFile`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storage.config_files import load_settings
    from tracegrade.api import ValueScorer, VectorCache, evaluate_value
    from transforms.config.scoring import ScoringFile

__all__ = ["ScoringFile", "ValueScorer", "VectorCache", "evaluate_value", "load_settings"]

_HOMES = {
    "ValueScorer": "tracegrade.api",
    "VectorCache": "tracegrade.api",
    "evaluate_value": "tracegrade.api",
    "ScoringFile": "transforms.config.scoring",
    "load_settings": "storage.config_files",
}


_RENAMED = {"Settings": "ScoringFile"}
"""Old public names and what they are called now; the old names go in the next release."""


def __getattr__(name: str) -> Any:
    if name in _RENAMED:
        from tracegrade._renamed import warn_renamed

        warn_renamed("tracegrade", name, _RENAMED[name])
        name = _RENAMED[name]
    if name not in _HOMES:
        raise AttributeError(f"module 'tracegrade' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_HOMES[name]), name)
