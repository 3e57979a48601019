"""The import contracts of pyproject.toml ([tool.importlinter]) hold, and they do catch a lower
layer importing a higher one, and a module doing what docs/architecture.md says only one
module does: a copy of the tree with one deliberate bad import fails them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("tracegrade", "pipelines", "storage", "transforms")
LINT = str(Path(sys.executable).with_name("lint-imports"))


def _copy_tree(target: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, target / package, ignore=shutil.ignore_patterns("*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", target / "pyproject.toml")
    return target


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [LINT, "--config", str(tree / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_tree_keeps_every_contract(tmp_path: Path) -> None:
    done = _lint(_copy_tree(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 7 kept, 0 broken." in done.stdout


@pytest.mark.parametrize(
    ("module", "bad_import", "broken"),
    [
        (
            "transforms/value.py",
            "import pipelines.runs",
            "transforms is not allowed to import pipelines",
        ),
        (
            "storage/store/hashing.py",
            "import tracegrade.cli",
            "storage is not allowed to import tracegrade",
        ),
        (
            "transforms/novelty.py",
            "import storage.store.duckdb_store",
            "transforms is not allowed to import storage",
        ),
        ("storage/inputs/readers.py", "import prefect", "storage is not allowed to import prefect"),
        ("transforms/judge/metrics.py", "import transforms.operations.model", "independence"),
        (
            "pipelines/score.py",
            "import pydantic_ai",
            "pipelines.score -> pydantic_ai",
        ),
        (
            "pipelines/phoenix.py",
            "import httpx",
            "pipelines.phoenix -> httpx",
        ),
        (
            "storage/inputs/formats.py",
            "import tomllib",
            "storage.inputs.formats -> tomllib",
        ),
        (
            "pipelines/stages.py",
            "import storage.store._connection",
            "pipelines.stages -> storage.store._connection",
        ),
    ],
)
def test_a_deliberate_bad_import_breaks_the_contracts(
    tmp_path: Path, module: str, bad_import: str, broken: str
) -> None:
    tree = _copy_tree(tmp_path)
    path = tree / module
    path.write_text(path.read_text() + f"\n{bad_import}  # deliberately against the layering\n")
    done = _lint(tree)
    assert done.returncode != 0
    assert "BROKEN" in done.stdout
    if broken != "independence":
        assert broken in done.stdout
