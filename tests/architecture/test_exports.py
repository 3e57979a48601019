"""Each module's `__all__` lists what other modules really import, and nothing is defined that
nothing uses (../shared/STYLE.md, "Names and size"; issue 45).

"Used" is read as text: a name counts as used when it appears as a word in another module of
the source, the tests, the benchmarks or the scripts (or, for an entry point, in
pyproject.toml, prefect.yaml or the Makefile). That errs towards keeping a name, never
towards flagging one that is used.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("tracegrade", "pipelines", "storage", "transforms")
READERS = (*PACKAGES, "tests", "bench", "scripts")
PUBLIC_API = {
    "tracegrade/__init__.py",
    "tracegrade/api.py",
    "tracegrade/judge.py",
    "tracegrade/evaluator.py",
}
"""The modules users import: their `__all__` is the public API (docs/architecture.md), kept
whether or not the project itself uses each name."""


@cache
def _texts() -> dict[Path, str]:
    return {
        path: path.read_text(encoding="utf-8")
        for folder in READERS
        for path in (ROOT / folder).rglob("*.py")
    }


@cache
def _places() -> dict[str, frozenset[Path]]:
    """Each word of the code, with the files it appears in."""
    found: dict[str, set[Path]] = {}
    for path, text in _texts().items():
        for word in set(re.findall(r"\w+", text)):
            found.setdefault(word, set()).add(path)
    return {word: frozenset(paths) for word, paths in found.items()}


def _configuration() -> str:
    return "".join(
        (ROOT / name).read_text() for name in ("pyproject.toml", "prefect.yaml", "Makefile")
    )


def _modules() -> list[Path]:
    return sorted(path for folder in PACKAGES for path in (ROOT / folder).rglob("*.py"))


def _exported(tree: ast.Module) -> list[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            assert isinstance(node.value, ast.List | ast.Tuple)
            return [item.value for item in node.value.elts if isinstance(item, ast.Constant)]
    return []


def _defined(tree: ast.Module) -> list[str]:
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [target.id for target in node.targets if isinstance(target, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [name for name in names if not name.startswith("__")]


def test_every_exported_name_is_imported_somewhere_else() -> None:
    unused = []
    for path in _modules():
        where = str(path.relative_to(ROOT))
        if where in PUBLIC_API or path.name == "__init__.py":
            continue
        for name in _exported(ast.parse(_texts()[path])):
            if not _places().get(name, frozenset()) - {path}:
                unused.append(f"{where}: {name}")
    assert unused == []


def test_nothing_is_defined_that_nothing_uses() -> None:
    configuration = _configuration()
    dead = []
    for path in _modules():
        text = _texts()[path]
        for name in _defined(ast.parse(text)):
            used_here = len(re.findall(rf"\b{re.escape(name)}\b", text)) > 1
            if not used_here and not _places()[name] - {path} and name not in configuration:
                dead.append(f"{path.relative_to(ROOT)}: {name}")
    assert dead == []
