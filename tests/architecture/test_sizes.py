"""Modules stay under 400 lines and functions under 60, in the source and the benchmarks
(../shared/STYLE.md: a module or function past that has two ideas in it)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("tracegrade", "pipelines", "storage", "transforms", "bench", "scripts")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _sources() -> list[Path]:
    return sorted(path for folder in FOLDERS for path in (ROOT / folder).rglob("*.py"))


def test_no_module_is_over_400_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for path in _sources()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_no_function_is_over_60_lines() -> None:
    long = {}
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = lines
    assert long == {}
