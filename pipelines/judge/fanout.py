"""A live judge run fanned out to a Dask cluster (`[execution] engine = "dask"`).

The flow's process plans as a local run does, judges in place what needs no call (reused and
blank submissions), writes the rest in `shards` shard files and submits one `judge_shard` task
per shard through the `judge_shards` subflow, whose task runner is prefect-dask's. A shard
runs the ordinary `run_live` with its share of the limits and appends its rows to a JSON Lines
file; the flow's process, the only one writing DuckDB, stores each shard's rows as it ends.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed

from pipelines.fanout import dask_runner
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
from storage.judge.shards import JsonlJudgeSink, ingest_shard_rows, shard_root
from storage.judge.store import DuckDBJudgeSink
from storage.store.registry import store_for
from transforms.config.scoring import ExecutionConfig
from transforms.judge.plan import PlannedItem
from transforms.judge.resolve import JudgeConfig

__all__ = ["judge_distributed"]

_task = task(cache_policy=NO_CACHE, persist_result=False)
_STOP = "STOP"


@_task
def judge_shard(shard: str, config: str | None) -> dict[str, Any]:
    """Judge one shard file's submissions; rows go to the `.jsonl` beside it. Returns the
    shard's counts, cost and stop reason."""
    data = json.loads(Path(shard).read_text(encoding="utf-8"))
    judge_config = load_judge_config(config)
    shards = int(data["shards"])
    mine = shard_config(judge_config, shards)
    budget = shard_budget(data["budget_usd"], shards)
    items = [decode_item(entry, judge_config) for entry in data["items"]]
    control = SharedStopControl(mine, budget, Path(shard).with_name(_STOP))
    with JsonlJudgeSink(Path(shard).with_suffix(".jsonl"), data["stored_score_keys"]) as sink:
        result = asyncio.run(
            run_live(items, mine, sink, data["identity"], budget_usd=budget, control=control)
        )
    return result.summary()


@flow(name="judge_shards", persist_result=False, log_prints=False)
def judge_shards(db: str, shards: list[str], config: str | None) -> list[dict[str, Any]]:
    """Run every shard on the flow's (Dask) task runner and store each one's rows as it ends.

    Run it with `judge_shards.with_options(task_runner=dask_runner(...))`.

    Raises:
        Exception: the first shard task that raised, after every shard's rows are stored.
    """
    store = store_for(db)
    futures = {judge_shard.submit(path, config): path for path in shards}
    summaries: list[dict[str, Any]] = []
    error: BaseException | None = None
    for future in as_completed(list(futures)):
        path = Path(futures[future])
        try:
            summaries.append(future.result())
        except Exception as exc:  # noqa: BLE001 - re-raised once every shard is stored
            error = error or exc
        ingest_shard_rows(store, path.with_suffix(".jsonl"))
        path.with_suffix(".jsonl").unlink(missing_ok=True)
        path.unlink(missing_ok=True)
    if error is not None:
        raise error
    return summaries


def write_shards(
    folder: Path,
    items: list[PlannedItem],
    shards: int,
    *,
    identity: dict[str, Any],
    stored_score_keys: dict[str, str],
    budget_usd: float | None,
) -> list[str]:
    """Write the shard files of `items` (split by `split_shards`) into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    parts = split_shards(items, shards)
    for number, part in enumerate(parts):
        path = folder / f"shard-{number:03d}.json"
        ids = {item.item_id for item in part}
        payload = {
            "shards": len(parts),
            "identity": identity,
            "budget_usd": budget_usd,
            "stored_score_keys": {k: v for k, v in stored_score_keys.items() if k in ids},
            "items": [encode_item(item) for item in part],
        }
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(payload), encoding="utf-8")
        partial.replace(path)
        paths.append(str(path))
    return paths


def _merge(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    counts: Counter[str] = Counter()
    for summary in summaries:
        counts.update(summary["counts"])
    reasons = [s for s in summaries if s["stop_reason"] is not None]
    reasons.sort(key=lambda s: not s["stop_fails_run"])  # the shard that stopped the run first
    return {
        "counts": dict(counts),
        "cost_usd": sum(float(s["cost_usd"]) for s in summaries),
        "stop_reason": reasons[0]["stop_reason"] if reasons else None,
        "failed": any(s["failed"] for s in summaries),
    }


def judge_distributed(
    db: str,
    items: list[PlannedItem],
    config: JudgeConfig,
    config_path: str | None,
    identity: dict[str, Any],
    budget_usd: float | None,
) -> dict[str, Any]:
    """Judge planned `items`: those needing no call here, the rest in shards on Dask."""
    store = store_for(db)
    sink = DuckDBJudgeSink(store)
    local = [item for item in items if not needs_calls(item)]
    remote = [item for item in items if needs_calls(item)]
    summaries = [asyncio.run(run_live(local, config, sink, identity)).summary()]
    if remote:
        execution = config.settings.execution
        # absolute paths: a worker's working directory need not be the flow's
        folder = (shard_root(store) / str(identity["run_id"])).resolve()
        if config_path is not None:
            config_path = str(Path(config_path).resolve())
        paths = write_shards(
            folder,
            remote,
            execution.shard_count,
            identity=identity,
            stored_score_keys=sink.stored_score_keys([item.item_id for item in remote]),
            budget_usd=budget_usd,
        )
        runner: Any = dask_runner(  # prefect-dask's runner: Flow's signature does not name it
            ExecutionConfig(
                engine="dask", dask_address=execution.dask_address, workers=execution.workers
            )
        )
        try:
            summaries += judge_shards.with_options(task_runner=runner)(db, paths, config_path)
        finally:
            # judge_shards stores each shard as it ends; what an interrupted subflow left is
            # stored here. A crash of this process leaves the folder for the next run.
            for path in sorted(folder.glob("shard-*.jsonl")):
                ingest_shard_rows(store, path)
            shutil.rmtree(folder, ignore_errors=True)
    return _merge(summaries)
