"""Sharding a live judge run: the split, each shard's limits, the shard files and their
idempotent ingestion, the shared stop file and the `[execution]` table (no Dask here)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import duckdb
import pytest
from judge_helpers import counting_model, items, judge_once, write_config

from pipelines.judge.runner import run_live
from pipelines.judge.shards import (
    SharedStopControl,
    decode_item,
    encode_item,
    needs_calls,
    shard_budget,
    shard_config,
    split_shards,
)
from storage.config_files import load_judge_config
from storage.judge.shards import (
    JsonlJudgeSink,
    ingest_leftover_shards,
    ingest_shard_rows,
    read_shard_rows,
    shard_root,
)
from storage.judge.store import DuckDBJudgeSink
from storage.store.duckdb_store import DuckDBStore
from transforms.errors import JudgeConfigError
from transforms.judge.plan import plan_items

CONFIG = """
max_concurrency = 5
[llm_default]
model = "openai-chat:judge"
[rate_limits.openai-chat]
requests_per_minute = 60000.0
tokens_per_minute = 3e7
"""

COLUMNS = "item_id, metric, cache_key, status, score, comment"


def frame(n: int = 12) -> object:
    rows = [(f"s{i:02d}", f"question {i % 3}", f"answer {i}") for i in range(n)]
    rows[7] = ("s07", "question 0", "answer 0")  # the same texts as s00, in another part
    rows[9] = ("s09", "question 0", "   ")  # blank: rejected without a call
    return items(rows)


def planned(tmp_path: Path, db: Path) -> list:
    config = load_judge_config(write_config(tmp_path, CONFIG), check_keys=False)
    with DuckDBStore(db) as store:
        return plan_items(frame(), config, DuckDBJudgeSink(store))  # type: ignore[arg-type]


def test_split_keeps_order_balance_and_identical_texts_together(tmp_path: Path) -> None:
    plan = planned(tmp_path, tmp_path / "p.duckdb")
    for shards in (1, 2, 3, 5, 40):
        parts = split_shards(plan, shards)
        assert len(parts) == min(shards, len(plan) - 1)  # s00 and s07 share one
        flat = [item.item_id for part in parts for item in part]
        assert sorted(flat) == sorted(item.item_id for item in plan)
        assert len(set(flat)) == len(flat)
        home = {item.item_id: n for n, part in enumerate(parts) for item in part}
        assert home["s00"] == home["s07"]
        assert split_shards(plan, shards) == parts  # deterministic
        for part in parts:  # each shard keeps item order, apart from s07 joining s00
            order = [item.item_id for item in part if item.item_id != "s07"]
            assert order == sorted(order)
    two = split_shards(plan, 2)
    assert [[item.item_id for item in part] for part in two] == [
        ["s00", "s07", "s01", "s02", "s03", "s04"],
        ["s05", "s06", "s08", "s09", "s10", "s11"],
    ]
    with pytest.raises(ValueError, match="shards = 0"):
        split_shards(plan, 0)
    assert not needs_calls(next(item for item in plan if item.item_id == "s09"))


def test_each_shard_gets_its_share_of_the_limits(tmp_path: Path) -> None:
    config = load_judge_config(write_config(tmp_path, CONFIG), check_keys=False)
    third = shard_config(config, 3)
    limit = third.settings.rate_limits["openai-chat"]
    assert limit.requests_per_minute == pytest.approx(20000.0)
    assert limit.tokens_per_minute == pytest.approx(1e7)
    assert third.settings.max_concurrency == 1
    assert shard_config(config, 8).settings.max_concurrency == 1  # at least 1
    assert shard_config(config, 2).settings.max_concurrency == 2
    assert shard_budget(0.9, 3) == pytest.approx(0.3) and shard_budget(None, 3) is None
    assert third.metrics == config.metrics and third.config_hash != config.config_hash
    assert config.settings.rate_limits["openai-chat"].requests_per_minute == 60000.0  # unchanged


def test_shard_items_round_trip_through_json(tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    config = load_judge_config(write_config(tmp_path, CONFIG), check_keys=False)
    model, _ = counting_model()
    judge_once(db, config, items([("a", "q", "x")]), model=model)
    with DuckDBStore(db) as store:
        plan = plan_items(
            items([("a", "q", "x"), ("b", "q", "x"), ("c", "q", "y")]),
            config,
            DuckDBJudgeSink(store),
        )
    back = [decode_item(json.loads(json.dumps(encode_item(item))), config) for item in plan]
    for before, after in zip(plan, back, strict=True):
        assert (after.item_id, after.user_query, after.submission) == (
            before.item_id,
            before.user_query,
            before.submission,
        )
        for old, new in zip(before.judgements, after.judgements, strict=True):
            assert (new.metric, new.cache_key, new.copied) == (
                old.metric,
                old.cache_key,
                old.copied,
            )
            assert (new.cached is None) == (old.cached is None) and new.needs_call == old.needs_call
    copied = back[1].judgements[0]
    assert copied.copied and copied.cached is not None and copied.cached["score"] == 80.0
    (tmp_path / "o").mkdir()
    only = '[[metrics]]\nname = "Coverage"\nmodel = "openai:x"\n'
    other = load_judge_config(write_config(tmp_path / "o", only), check_keys=False)
    with pytest.raises(ValueError, match="does not list"):
        decode_item(encode_item(plan[0]), other)


def stored(db: Path, sql: str) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_shard_rows_are_stored_once_however_often_ingested(tmp_path: Path) -> None:
    config = load_judge_config(write_config(tmp_path, CONFIG), check_keys=False)
    model, seen = counting_model(
        lambda n, prompt: {"score": float(len(prompt) % 90), "comment": prompt[-9:]}
    )
    direct = tmp_path / "direct.duckdb"
    judge_once(direct, config, frame(), model=model)  # type: ignore[arg-type]
    calls = len(seen)

    db = tmp_path / "sharded.duckdb"
    with DuckDBStore(db) as store:
        sink = DuckDBJudgeSink(store)
        plan = plan_items(frame(), config, sink)  # type: ignore[arg-type]
        folder = shard_root(store) / "run-x"
        folder.mkdir(parents=True)
        identity = {
            "run_id": "run-x",
            "run_seq": 1,
            "source": "test",
            "mode": "live",
            "config_hash": config.config_hash,
        }
        parts = split_shards(plan, 2)
        for number, part in enumerate(parts):
            with JsonlJudgeSink(folder / f"shard-{number:03d}.jsonl", {}) as shard_sink:
                result = asyncio.run(
                    run_live(
                        part,
                        shard_config(config, 2),
                        shard_sink,
                        identity,
                        factory=lambda name: model,
                    )
                )
            assert not result.failed
        assert len(seen) == 2 * calls  # the same calls as the direct run
        first = folder / "shard-000.jsonl"
        results, scores = read_shard_rows(first)
        assert len(results) == 4 * len(parts[0]) and len(scores) == len(parts[0])
        assert ingest_shard_rows(store, first) == (len(results), len(scores))
        assert ingest_shard_rows(store, first) == (0, 0)  # again: nothing new
        with (folder / "shard-001.jsonl").open("a") as handle:
            handle.write('{"table": "results", "row": {"run_id": "run-x", "item')  # cut short
        assert ingest_leftover_shards(store) == (4 * len(parts[1]), len(parts[1]))
        assert not folder.exists()
        assert ingest_leftover_shards(store) == (0, 0)
    sql = f"SELECT {COLUMNS} FROM judge_results ORDER BY item_id, metric"
    assert stored(db, sql) == stored(direct, sql) and len(stored(db, sql)) == 48
    sql = "SELECT item_id, score_key, status, overall_score FROM judge_scores ORDER BY 1"
    assert stored(db, sql) == stored(direct, sql)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n{}\n")
    with pytest.raises(ValueError, match="bad.jsonl:1 is not a judge shard row"):
        read_shard_rows(bad)


def test_a_failing_stop_in_one_shard_stops_the_others(tmp_path: Path) -> None:
    config = load_judge_config(write_config(tmp_path, CONFIG), check_keys=False)
    stop = tmp_path / "STOP"
    one = SharedStopControl(config, None, stop)
    other = SharedStopControl(config, None, stop)
    one.stop("budget of $1 reached", fails_run=False)
    assert not stop.exists() and asyncio.run(other.acquire("openai-chat:judge", 10))
    two = SharedStopControl(config, None, stop)
    two.stop("authentication or quota error: 401", fails_run=True)
    assert stop.read_text() == "authentication or quota error: 401"
    assert not asyncio.run(other.acquire("openai-chat:judge", 10))
    assert other.stop_reason == "another shard stopped the run: authentication or quota error: 401"
    assert not other.stop_fails_run and two.stop_fails_run


def test_execution_table_is_validated_and_not_hashed(tmp_path: Path) -> None:
    base = load_judge_config(write_config(tmp_path, CONFIG), check_keys=False)
    dask = load_judge_config(
        write_config(tmp_path, CONFIG + '[execution]\nengine = "dask"\nworkers = 3\n'),
        check_keys=False,
    )
    assert dask.settings.execution.shard_count == 3 and dask.config_hash == base.config_hash
    assert base.settings.execution.engine == "local"
    cases = {
        'engine = "ray"': "execution.engine",
        "workers = 0": "execution.workers: 0 is not a whole number >= 1; use 1 or more",
        'engine = "dask"\nshards = -2': "execution.shards: -2 is not a whole number >= 1",
        'dask_address = "tcp://h:8786"': "engine = 'dask' or remove dask_address",
        'engine = "dask"\nthreads = 2': "execution.threads: unknown key",
    }
    for text, message in cases.items():
        with pytest.raises(JudgeConfigError, match=message):
            load_judge_config(write_config(tmp_path, CONFIG + "[execution]\n" + text + "\n"))
    with pytest.raises(JudgeConfigError, match="set engine = 'local' for batch mode"):
        load_judge_config(
            write_config(tmp_path, 'mode = "batch"\n' + CONFIG + '[execution]\nengine = "dask"\n'),
            check_keys=False,
        )
