"""Writing converted trajectories as ReasoningTrace JSON Lines (the bench/convert_*.py scripts)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = ["write_traces"]


def write_traces(
    paths: Iterable[Path],
    trace_of: Callable[[dict[str, Any], Path], dict[str, Any] | None],
    out: Path,
) -> tuple[int, int]:
    """Each JSON file of `paths` as one line of `out`, `trace_of(record, path)`'s trace; a
    record it gives None for is left out. Returns (written, left out)."""
    written = left_out = 0
    with out.open("w", encoding="utf-8") as lines:
        for path in paths:
            trace = trace_of(json.loads(path.read_text(encoding="utf-8")), path)
            if trace is None:
                left_out += 1
                continue
            lines.write(json.dumps(trace, ensure_ascii=False) + "\n")
            written += 1
    return written, left_out
