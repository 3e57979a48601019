"""docs/architecture.md is the map (../shared/STYLE.md; issue 45, must-have 4): every module of
the four packages is on it, by its file or by a folder of its own, and every module or folder
it names exists.

What counts as naming, in backticks: a path from the repository root (`storage/store/commit.py`,
`pipelines/judge/`, `pipelines/runs.RunSteps`, a module and a name in it); inside a row of
the capability table, a path in a layer's column is read from that layer's folder
(`value.py` in the transforms/ column is `transforms/value.py`). A layer's own folder
(`storage/`) names no module: it would name them all.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAP = ROOT / "docs" / "architecture.md"
LAYERS = ("tracegrade", "pipelines", "storage", "transforms")
COLUMNS = {1: "transforms", 2: "storage", 3: "pipelines", 4: "tracegrade/cli"}
"""The capability table's columns, by position, and the folder each one's paths are read from."""

_TICKED = re.compile(r"`([^`]+)`")
_PATH = re.compile(r"^[\w./]+$")


def _as_path(token: str, folder: str | None) -> str | None:
    """The repository path a backticked token names, or None when it names no path."""
    token = token.strip()
    if "<" in token or not _PATH.match(token) or "/" not in token and not token.endswith(".py"):
        return None
    if not token.startswith(LAYERS):
        if folder is None:
            return None
        token = f"{folder}/{token}"
    if token.endswith((".py", "/")):
        return token
    module, _, _ = token.rpartition(".")  # a module and a name in it: pipelines/runs.RunSteps
    return f"{module}.py" if module and "/" in module else None


@cache
def _named() -> frozenset[str]:
    named: set[str] = set()
    in_table = False
    for line in MAP.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            in_table = False
            named.update(_paths_in(line, None))
            continue
        cells = line.split("|")[1:-1]
        in_table = in_table or "transforms/ (pure)" in line
        for position, cell in enumerate(cells):
            named.update(_paths_in(cell, COLUMNS.get(position) if in_table else None))
    return frozenset(named)


def _paths_in(text: str, folder: str | None) -> list[str]:
    """The paths a line or a table cell names; a bare file after a folder's name in the same
    cell (`compare/` (`stats.py`, ...)) is read from that folder when it is there."""
    found: list[str] = []
    inner: str | None = None
    for token in _TICKED.findall(text):
        path = _as_path(token, folder)
        if path is None:
            continue
        if inner is not None and "/" not in token and (ROOT / inner / token).exists():
            path = f"{inner}/{token}"
        if path.endswith("/"):
            inner = path.rstrip("/")
        found.append(path)
    return found


def _modules() -> list[str]:
    return sorted(
        str(path.relative_to(ROOT))
        for layer in LAYERS
        for path in (ROOT / layer).rglob("*.py")
        if path.name != "__init__.py"
    )


def test_every_module_is_on_the_map() -> None:
    named = _named()
    folders = {path for path in named if path.endswith("/") and path.rstrip("/") not in LAYERS}
    missing = [
        module
        for module in _modules()
        if module not in named and not any(module.startswith(folder) for folder in folders)
    ]
    assert missing == [], (
        "name these in docs/architecture.md (by file, or by a folder of their own)"
    )


def test_the_map_names_nothing_that_does_not_exist() -> None:
    gone = [path for path in sorted(_named()) if not (ROOT / path).exists()]
    assert gone == []
