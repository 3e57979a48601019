"""tracegrade against a REAL Phoenix server (arize-phoenix, SQLite storage) on 127.0.0.1: an
instrumented pydantic-ai agent traces into it, `pull phoenix` scores its traces, `push
phoenix` writes the scores back, and Phoenix's own API gives them back equal to the DuckDB
rows; a second pull takes only the new traces; Phoenix stopped in the middle of a pull leaves
nothing partial and the rerun, after it restarts, completes.

`make phoenix-test` installs Phoenix in .venv-phoenix and runs this module with
TRACEGRADE_PHOENIX_VENV set; `make test` skips it (no Phoenix)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from traced_agent import free_port, phoenix_serving, run_agent

import pipelines.phoenix_api as phoenix_api
from pipelines.errors import ServerUnavailable
from pipelines.phoenix import pull_phoenix
from pipelines.phoenix_api import PhoenixApi
from storage.phoenix.store import trace_targets
from storage.store.duckdb_store import DuckDBStore
from tracegrade.cli.app import main
from transforms.phoenix import source_key

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from chromium_page import screenshot_url  # noqa: E402

VENV = os.environ.get("TRACEGRADE_PHOENIX_VENV")
SCREENSHOT = os.environ.get("TRACEGRADE_PHOENIX_SCREENSHOT")
"""Where to copy the screenshot of Phoenix's UI as well (docs/phoenix.png is made so)."""
PROJECT = "support-agent"

pytestmark = pytest.mark.skipif(
    not VENV, reason="needs a Phoenix server in its own virtual environment: make phoenix-test"
)


def spans_named(endpoint: str, count: int, name: str | None = None) -> list[dict[str, Any]]:
    """Phoenix inserts the spans it receives in batches: wait until it shows `count` root
    spans (with `name`, `count` spans of that name); returns its spans then."""
    url = f"{endpoint}/v1/projects/{PROJECT}/spans"
    deadline = time.monotonic() + 60
    while True:
        spans = httpx.get(url, params={"limit": 1000}, timeout=10).json()["data"]
        if name is None:
            found = sum(span["parent_id"] is None for span in spans)
        else:
            found = sum(span["name"] == name for span in spans)
        if found >= count:
            return list(spans)
        assert time.monotonic() < deadline, f"Phoenix shows {len(spans)} spans"
        time.sleep(0.5)


def wait_for_roots(endpoint: str, count: int) -> int:
    """How many agent spans Phoenix holds once it shows `count` traces' root spans."""
    spans = spans_named(endpoint, count)
    return sum(span["name"] != "gen_ai.evaluation" for span in spans)


def stored(db: Path, endpoint: str) -> dict[str, tuple[Any, ...]]:
    """Per root span: the trace's score, level, reason and confidence as DuckDB holds them."""
    with DuckDBStore(db, read_only=True) as store:
        targets = trace_targets(store, source_key(endpoint, PROJECT))
        rows = store.sql_with(
            "SELECT t.span_hex, s.score, c.level, c.reason, c.aggregate FROM __targets t "
            "JOIN latest_scores s USING (trace_id) JOIN confidence_traces c USING (trace_id)",
            targets=targets,
        )
    return {row[0]: row[1:] for row in rows.iter_rows()}


def screenshot_of_a_trace(endpoint: str, trace_hex: str, path: Path) -> None:
    """Phoenix's own UI on one trace, in headless Chromium, once it shows tracegrade's
    annotations beside the trace (a TimeoutError if it never does)."""
    projects = httpx.get(f"{endpoint}/v1/projects", timeout=10).json()["data"]
    (project_id,) = [p["id"] for p in projects if p["name"] == PROJECT]
    shown = (
        "['tracegrade.value', 'tracegrade.level'].every(n => document.body.innerText.includes(n))"
    )
    screenshot_url(f"{endpoint}/projects/{project_id}/traces/{trace_hex}", path, shown)
    if SCREENSHOT:
        shutil.copyfile(path, SCREENSHOT)


def filtered(endpoint: str, condition: str) -> set[str]:
    """The spans of the project Phoenix's own filter language picks (the spans table's filter
    box in its UI), through its GraphQL API."""
    projects = httpx.get(f"{endpoint}/v1/projects", timeout=10).json()["data"]
    (project_id,) = [p["id"] for p in projects if p["name"] == PROJECT]
    query = (
        "query($id: ID!, $f: String) { node(id: $id) { ... on Project { "
        "spans(first: 1000, filterCondition: $f) { edges { node { spanId } } } } } }"
    )
    answer = httpx.post(
        f"{endpoint}/graphql",
        json={"query": query, "variables": {"id": project_id, "f": condition}},
        timeout=30,
    ).json()
    return {edge["node"]["spanId"] for edge in answer["data"]["node"]["spans"]["edges"]}


def pulled(db: Path, endpoint: str) -> Any:
    return pull_phoenix(endpoint, PROJECT, str(db), quiet_s=0.0, no_embedder=True)


def test_pull_score_push_against_a_real_phoenix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prefect_server: None
) -> None:
    assert VENV is not None
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    home, db, clean = tmp_path / "phoenix", tmp_path / "scores.duckdb", tmp_path / "clean.duckdb"
    home.mkdir()
    monkeypatch.setattr(phoenix_api, "WAITS_S", (0.2, 0.2, 0.2, 0.2))
    common = ["--endpoint", endpoint, "--project", PROJECT, "--db", str(db)]
    with phoenix_serving(Path(VENV), home, port) as server:
        run_agent(endpoint, PROJECT)
        first_spans = wait_for_roots(endpoint, 3)
        assert main(["pull", "phoenix", *common, "--no-embedder", "--quiet", "0"]) == 0
        assert main(["push", "phoenix", *common]) == 0
        rows = stored(db, endpoint)
        assert len(rows) == 3
        with PhoenixApi(endpoint) as api:
            written = api.span_annotations(PROJECT, list(rows))
        by_span: dict[str, dict[str, Any]] = {}
        for item in written:
            assert item["identifier"] == "tracegrade" and item["source"] == "API"
            by_span.setdefault(item["span_id"], {})[item["name"]] = item["result"]
        for span, (score, level, reason, aggregate) in rows.items():
            assert by_span[span]["tracegrade.value"]["score"] == pytest.approx(score, abs=1e-12)
            assert by_span[span]["tracegrade.level"] == {
                "label": level,
                "score": pytest.approx(aggregate, abs=1e-12),
                "explanation": reason,
            }
        for level in {row[1] for row in rows.values()}:  # filter and sort by them in Phoenix
            wanted = {span for span, row in rows.items() if row[1] == level}
            assert (
                filtered(endpoint, f"annotations['tracegrade.level'].label == '{level}'") == wanted
            )
        cut = sorted(row[0] for row in rows.values())[1]  # the middle one of three
        low = {span for span, row in rows.items() if row[0] < cut}
        assert 0 < len(low) < len(rows)
        assert filtered(endpoint, f"annotations['tracegrade.value'].score < {cut!r}") == low
        assert main(["push", "phoenix", *common]) == 0  # again: nothing new to write
        with PhoenixApi(endpoint) as api:
            assert len(api.span_annotations(PROJECT, list(rows))) == len(written) == 6

        assert (
            main(["push", "otlp", "--endpoint", endpoint, "--db", str(db), "--project", PROJECT])
            == 0
        )
        for span in spans_named(endpoint, 3, "gen_ai.evaluation"):
            if span["name"] == "gen_ai.evaluation" and span["parent_id"] in rows:
                events = {e["attributes"]["gen_ai.evaluation.name"]: e for e in span["events"]}
                score, level = rows[span["parent_id"]][:2]
                value = events["tracegrade.value"]["attributes"]["gen_ai.evaluation.score.value"]
                assert value == pytest.approx(score, abs=1e-12)
                assert (
                    events["tracegrade.level"]["attributes"]["gen_ai.evaluation.score.label"]
                    == level
                )

        with DuckDBStore(db, read_only=True) as store:
            (trace_hex,) = store.rows(
                "SELECT trace_hex FROM phoenix_spans WHERE span_kind = 'AGENT' "
                "ORDER BY span_rowid DESC LIMIT 1"
            )[0]
        screenshot_of_a_trace(endpoint, trace_hex, tmp_path / "phoenix.png")

        run_agent(endpoint, PROJECT)
        all_spans = wait_for_roots(endpoint, 6)
        from pipelines.flows import pull_phoenix as pull_flow  # the nightly deployment's flow

        second = pull_flow(endpoint, PROJECT, str(db), quiet_s=0.0, no_embedder=True)
        assert (second.spans, second.traces) == (all_spans - first_spans, 3)
        assert len(stored(db, endpoint)) == 6

        run_agent(endpoint, PROJECT)
        wait_for_roots(endpoint, 9)
        monkeypatch.setattr(phoenix_api, "PAGE_SIZE", 4)
        pages = PhoenixApi.spans_page

        def stop_after_the_first_page(self: PhoenixApi, *args: Any, **kwargs: Any) -> Any:
            page = pages(self, *args, **kwargs)
            server.terminate()
            server.wait()
            return page

        monkeypatch.setattr(PhoenixApi, "spans_page", stop_after_the_first_page)
        with pytest.raises(ServerUnavailable, match="in 5 tries"):
            pulled(db, endpoint)
        monkeypatch.setattr(PhoenixApi, "spans_page", pages)
        assert len(stored(db, endpoint)) == 6  # nothing of the third round is scored

    with phoenix_serving(Path(VENV), home, port):  # Phoenix again, with the spans it had
        rerun = pulled(db, endpoint)
        assert rerun.traces == 3
        assert pulled(clean, endpoint).traces == 9
    assert stored(db, endpoint) == stored(clean, endpoint)
