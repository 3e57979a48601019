"""The judge_traces flow fanned out to a local 2-worker Dask cluster gives the local run's
judgements with the same number of requests, and a re-run makes none."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import polars as pl
import pytest
from conftest import query_rows
from judge_helpers import (
    Reply,
    counting_model,
    error_reply,
    fake_server,
    tool_reply,
    write_config,
)

from pipelines.errors import JudgeRunFailed

CONFIG = """
max_concurrency = 4
[llm_default]
model = "openai-chat:judge"
max_retries = 1
[rate_limits.openai-chat]
requests_per_minute = 60000.0
"""
DASK = '[execution]\nengine = "dask"\nworkers = 2\n'
RESULTS = (
    "SELECT item_id, metric, cache_key, status, score, comment, error, mode, config_hash "
    "FROM latest_judge_results ORDER BY item_id, metric"
)
SCORES = (
    "SELECT item_id, score_key, status, overall_score, failed_metrics "
    "FROM latest_judge_scores ORDER BY item_id"
)


def answers(tmp_path: Path) -> Path:
    rows = [(f"s{i:02d}", f"question {i % 4}", f"answer number {i}") for i in range(12)]
    rows[10] = ("s10", "question 1", "answer number 1")  # the texts of s01: judged once
    rows[11] = ("s11", "question 3", " ")  # blank: no call
    table = tmp_path / "answers.jsonl"
    table.write_text(
        "".join(json.dumps({"id": i, "user_query": q, "submission": s}) + "\n" for i, q, s in rows)
    )
    return table


def by_prompt(server: object) -> object:
    """Replies whose score and comment follow from the request's content alone."""

    def script(number: int) -> Reply:
        payload = server.requests[number - 1]  # type: ignore[attr-defined]
        text = json.dumps(payload["messages"], sort_keys=True)
        if "FAIL" in text:
            return error_reply(401)
        digest = hashlib.sha256(text.encode()).hexdigest()
        return tool_reply({"score": int(digest[:6], 16) % 101, "comment": digest[:12]})

    return script


@pytest.mark.slow
def test_dask_judge_run_equals_the_local_run(
    prefect_server: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.flows import judge_traces

    table = answers(tmp_path)
    local_config = write_config(tmp_path, CONFIG)
    (tmp_path / "d").mkdir()
    dask_config = write_config(tmp_path / "d", CONFIG + DASK)
    holder: dict[str, object] = {}
    with fake_server(lambda n: holder["script"](n), monkeypatch) as server:  # type: ignore[operator]
        holder["script"] = by_prompt(server)
        local = judge_traces(
            db=str(tmp_path / "l.duckdb"), config=str(local_config), table=str(table)
        )
        local_calls = server.count
        fanned = judge_traces(
            db=str(tmp_path / "d.duckdb"), config=str(dask_config), table=str(table)
        )
        assert server.count - local_calls == local_calls == 10 * 4  # s10 reuses s01, s11 blank
        again = judge_traces(
            db=str(tmp_path / "d.duckdb"), config=str(dask_config), table=str(table)
        )
        assert server.count == 2 * local_calls  # the re-run made no call
    assert fanned.counts["calls"] == local.counts["calls"] == local_calls
    assert fanned.counts["submissions"] == local.counts["submissions"] == 12
    assert fanned.counts["submissions_rejected"] == 1 and fanned.counts["submissions_ok"] == 11
    assert again.counts["calls"] == 0 and again.counts["judgements_cached"] == 12 * 4
    dask_db, local_db = tmp_path / "d.duckdb", tmp_path / "l.duckdb"
    assert query_rows(dask_db, RESULTS) == query_rows(local_db, RESULTS)
    assert len(query_rows(dask_db, RESULTS)) == 48
    assert query_rows(dask_db, SCORES) == query_rows(local_db, SCORES)
    assert len({row[4] for row in query_rows(dask_db, RESULTS)}) > 10  # scores differ by prompt
    assert query_rows(dask_db, "SELECT count(DISTINCT run_id) FROM judge_results") == [(1,)]
    assert not list((tmp_path / ".d.duckdb.work" / "judge-shards").glob("*"))


@pytest.mark.slow
def test_an_auth_error_in_a_shard_fails_the_run_and_keeps_what_was_judged(
    prefect_server: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.flows import judge_traces

    rows = [(f"s{i}", "q", f"fine {i}") for i in range(5)] + [("s5", "q", "FAIL")]
    table = tmp_path / "answers.jsonl"
    table.write_text(
        "".join(json.dumps({"id": i, "user_query": q, "submission": s}) + "\n" for i, q, s in rows)
    )
    config = write_config(
        tmp_path, CONFIG.replace("max_concurrency = 4", "max_concurrency = 1") + DASK
    )
    holder: dict[str, object] = {}
    with fake_server(lambda n: holder["script"](n), monkeypatch) as server:  # type: ignore[operator]
        holder["script"] = by_prompt(server)
        with pytest.raises(JudgeRunFailed, match="authentication or quota error"):
            judge_traces(db=str(tmp_path / "f.duckdb"), config=str(config), table=str(table))
    db = tmp_path / "f.duckdb"
    statuses = {
        s: n for s, n in query_rows(db, "SELECT status, count(*) FROM judge_results GROUP BY 1")
    }
    assert statuses.get("auth_error") == 1 and statuses.get("ok", 0) >= 4
    assert query_rows(db, "SELECT status FROM runs") == [("failed",)]


def test_a_crashed_runs_shard_rows_are_stored_before_the_next_run_plans(
    prefect_server: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.flows import judge_traces
    from pipelines.judge.runner import run_live
    from pipelines.judge.shards import decode_item, encode_item
    from storage.config_files import load_judge_config
    from storage.judge.shards import JsonlJudgeSink, shard_root
    from storage.judge.store import DuckDBJudgeSink
    from storage.store.duckdb_store import DuckDBStore
    from transforms.judge.plan import plan_items

    table = answers(tmp_path)
    path = write_config(tmp_path, CONFIG)
    config = load_judge_config(path, check_keys=False)
    db = tmp_path / "c.duckdb"
    frame = pl.read_ndjson(table).rename({"id": "item_id"}).head(6)
    with DuckDBStore(db) as store:  # a dask run that died after its shard judged 6 submissions
        planned = plan_items(frame, config, DuckDBJudgeSink(store))
        folder = shard_root(store) / "crashed-run"
        folder.mkdir(parents=True)
    shard = [decode_item(encode_item(item), config) for item in planned]
    identity = {
        "run_id": "crashed-run",
        "run_seq": 0,
        "source": "x",
        "mode": "live",
        "config_hash": "h",
    }
    model, seen = counting_model()
    with JsonlJudgeSink(folder / "shard-000.jsonl", {}) as sink:
        asyncio.run(run_live(shard, config, sink, identity, factory=lambda n: model))
    assert len(seen) == 24
    holder: dict[str, object] = {}
    with fake_server(lambda n: holder["script"](n), monkeypatch) as server:  # type: ignore[operator]
        holder["script"] = by_prompt(server)
        report = judge_traces(db=str(db), config=str(path), table=str(table))
        assert server.count == 4 * 4  # s06..s09 only: s10 reuses s01, s11 is blank
    assert report.counts["judgements_cached"] == 6 * 4 + 4  # the crashed run's, and s10's copy
    assert not folder.exists()
    assert query_rows(db, "SELECT count(*) FROM judge_results WHERE run_id = 'crashed-run'") == [
        (24,)
    ]
