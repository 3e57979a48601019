"""tracegrade: batch scoring of AI-agent reasoning traces.

The public API: the SDK's single-trace scorer (`evaluate_value`, `VectorCache`) and the
scoring configuration. The names are imported on first use, so that `tracegrade` (the command
line) starts without loading what it does not run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storage.config_files import load_settings
    from tracegrade.api import ValueScorer, VectorCache, evaluate_value
    from transforms.config.scoring import Settings

__all__ = ["Settings", "ValueScorer", "VectorCache", "evaluate_value", "load_settings"]

_HOMES = {
    "ValueScorer": "tracegrade.api",
    "VectorCache": "tracegrade.api",
    "evaluate_value": "tracegrade.api",
    "Settings": "transforms.config.scoring",
    "load_settings": "storage.config_files",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'tracegrade' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_HOMES[name]), name)
