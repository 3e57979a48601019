"""Size guidance, not a size law (../shared/STYLE.md, "Names and size"; issue 45): a module
over 600 lines or a function over 80 is flagged for review. One that holds one idea at that
length is fine, once someone has read it and said so in `REVIEWED`; one that holds two is
split by idea. Nothing is split only to pass a count."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("tracegrade", "pipelines", "storage", "transforms", "bench", "scripts")
REVIEW_MODULE_LINES = 600
REVIEW_FUNCTION_LINES = 80
REVIEWED: dict[str, str] = {}
"""Modules (`path`) and functions (`path:name`) read past the guidance and kept whole, each
with the one idea it holds."""


def _sources() -> list[Path]:
    return sorted(path for folder in FOLDERS for path in (ROOT / folder).rglob("*.py"))


def test_modules_past_600_lines_were_reviewed() -> None:
    long = {
        where: lines
        for path in _sources()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > REVIEW_MODULE_LINES
        and (where := str(path.relative_to(ROOT))) not in REVIEWED
    }
    assert long == {}, "read these; split by idea, or add them to REVIEWED with their one idea"


def test_functions_past_80_lines_were_reviewed() -> None:
    long = {}
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                where = f"{path.relative_to(ROOT)}:{node.name}"
                if lines > REVIEW_FUNCTION_LINES and where not in REVIEWED:
                    long[where] = lines
    assert long == {}, "read these; split by idea, or add them to REVIEWED with their one idea"


def test_every_review_names_something_still_past_the_guidance() -> None:
    stale = []
    for where in REVIEWED:
        path, _, function = where.partition(":")
        text = (ROOT / path).read_text(encoding="utf-8") if (ROOT / path).exists() else ""
        if not function:
            if len(text.splitlines()) <= REVIEW_MODULE_LINES:
                stale.append(where)
            continue
        sizes = [
            (node.end_lineno or node.lineno) - node.lineno + 1
            for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function
        ]
        if not any(size > REVIEW_FUNCTION_LINES for size in sizes):
            stale.append(where)
    assert stale == []
