"""tracegrade: batch scoring of AI-agent reasoning traces.

The single-trace API is imported lazily so that the layers below (transforms, storage) can
import `tracegrade.config` without pulling in the whole package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracegrade.api import ValueScorer, VectorCache, evaluate_value
    from tracegrade.config import Settings, load_settings

__all__ = ["Settings", "ValueScorer", "VectorCache", "evaluate_value", "load_settings"]

_HOMES = {
    "ValueScorer": "tracegrade.api",
    "VectorCache": "tracegrade.api",
    "evaluate_value": "tracegrade.api",
    "Settings": "tracegrade.config",
    "load_settings": "tracegrade.config",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'tracegrade' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_HOMES[name]), name)
