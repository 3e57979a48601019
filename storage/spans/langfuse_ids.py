"""The Langfuse ids of the traces and observations in Langfuse export files, by the hex ids
tracegrade reads them as (`storage.spans.langfuse.original_ids`): what a scores file for Langfuse
must name."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from storage.spans.langfuse import original_ids
from storage.spans.otel_files import is_one_document

__all__ = ["langfuse_ids"]


def _values(path: Path) -> list[Any]:
    text = path.read_bytes().decode("utf-8-sig", errors="replace")
    if is_one_document(path):
        value = json.loads(text)
        return value if isinstance(value, list) else [value]
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def langfuse_ids(paths: Sequence[Path]) -> dict[str, str]:
    """Hex id (32 digits a trace's, 16 an observation's) to the id Langfuse gave, over the
    Langfuse traces and blob-export observation rows in `paths` (other values are passed over)."""
    found: dict[str, str] = {}
    for path in paths:
        for value in _values(path):
            if isinstance(value, dict):
                found.update(original_ids(value))
    return found
