"""The pipelines and the command line talk to the store through named functions of storage,
never in SQL of their own (issue 45, must-have 1; docs/architecture.md, "storage").

Two things are checked in every module of `pipelines/` and `tracegrade/`: no call of a method
that runs SQL text (`sql`, `rows`, `execute`, ...), and no string that is an SQL statement.
The exceptions are the ones listed, each with its reason.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CALLERS = ("pipelines", "tracegrade")

SQL_METHODS = frozenset(
    {
        "sql",
        "rows",
        "execute",
        "copy_to",
        "sql_with",
        "execute_with",
        "cursor_rows",
        "numpy_columns",
        "create_temp_table",
        "drop_temp",
    }
)
"""The store's methods (storage.store.statements.Statements) that run SQL text."""

ALLOWED_CALLS = {
    ("tracegrade/cli/scoring.py", "cursor_rows"): "`tracegrade sql` runs the user's own query",
}

ALLOWED_SQL_TEXT = {
    "tracegrade/demo.py": "DEMO_QUERIES: queries the demo prints for the user to try",
}

_STATEMENT = re.compile(
    r"^\s*(SELECT|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s|COPY\s|WITH\s+\w+\s+AS)\b"
)


def problems(path: str, source: str) -> list[str]:
    """Where the module at `path` (relative to the root) runs SQL text of its own, by line."""
    found: set[tuple[int, str]] = set()
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in SQL_METHODS
            and (path, node.func.attr) not in ALLOWED_CALLS
        ):
            found.add((node.lineno, f"calls .{node.func.attr}(...)"))
        texts = []
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            texts.append(node.value)
        if isinstance(node, ast.JoinedStr):
            texts.append(
                "".join(
                    part.value
                    for part in node.values
                    if isinstance(part, ast.Constant) and isinstance(part.value, str)
                )
            )
        if path not in ALLOWED_SQL_TEXT and any(_STATEMENT.match(text) for text in texts):
            found.add((node.lineno, "holds an SQL statement"))
    return [f"{path}:{line} {what}" for line, what in sorted(found)]


def test_pipelines_and_commands_send_the_store_no_sql_of_their_own() -> None:
    found = [
        problem
        for folder in CALLERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        for problem in problems(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))
    ]
    assert not found, (
        "Put the SQL in a named function of storage (the capability's store module) and call "
        "that:\n" + "\n".join(found)
    )


def test_the_check_finds_sql_sent_from_a_pipeline() -> None:
    """A deliberate break: the check is not vacuous."""
    broken = (
        "def count(store):\n"
        '    return store.sql("SELECT count(*) AS n FROM traces")["n"][0]\n'
        "def ids(store, run):\n"
        '    query = f"SELECT trace_id FROM traces WHERE run_id = {run}"\n'
        "    return query\n"
    )
    found = problems("pipelines/broken.py", broken)
    assert found == [
        "pipelines/broken.py:2 calls .sql(...)",
        "pipelines/broken.py:2 holds an SQL statement",
        "pipelines/broken.py:4 holds an SQL statement",
    ]
    assert problems("tracegrade/cli/scoring.py", "store.cursor_rows(query)") == []
