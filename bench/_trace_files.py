"""Writing converted trajectories (the bench/convert_*.py scripts): as ReasoningTrace JSON Lines,
and the tool calls of chat-message records."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = ["function_call", "write_traces"]


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


def function_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """One tool call of an assistant message in the OpenAI layout that `tracegrade import
    chat` reads: a `function` with its arguments as JSON text."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
