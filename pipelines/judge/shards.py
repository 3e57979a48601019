"""A live run cut into shards: which submissions go together, each shard's share of the limits,
the shard's input as JSON, and a RunControl that stops when another shard has stopped.

Pure apart from `SharedStopControl`, which reads and writes one stop file.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from pipelines.judge.control import RunControl
from transforms.config.judge import RateLimit
from transforms.judge.plan import PlannedItem, PlannedJudgement
from transforms.judge.resolve import JudgeConfig

__all__ = [
    "SharedStopControl",
    "decode_item",
    "encode_item",
    "needs_calls",
    "shard_budget",
    "shard_config",
    "split_shards",
]

SHARED_ROW_FIELDS = ("item_id", "metric", "cache_key", "status", "score", "comment", "error")
"""What a shard needs of a reused stored result: its overall score and a copied row."""


def needs_calls(item: PlannedItem) -> bool:
    """The submission has an LLM judgement with no reusable result (and is not blank)."""
    return not item.blank and any(j.needs_call for j in item.judgements)


def split_shards(items: list[PlannedItem], shards: int) -> list[list[PlannedItem]]:
    """Cut `items` into at most `shards` contiguous, balanced shards, in item order.

    Submissions with the same texts (hence the same cache keys) stay in one shard, so a text
    judged by several submissions is still called once, as in a local run. Empty shards are
    dropped.
    """
    if shards < 1:
        raise ValueError(f"shards = {shards}; use 1 or more")
    groups: dict[tuple[str, str], list[PlannedItem]] = {}
    for item in items:
        groups.setdefault((item.user_query, item.submission), []).append(item)
    out: list[list[PlannedItem]] = [[] for _ in range(shards)]
    before = 0
    for group in groups.values():
        out[min(shards - 1, before * shards // max(len(items), 1))].extend(group)
        before += len(group)
    return [shard for shard in out if shard]


def _divided(limit: RateLimit, shards: int) -> RateLimit:
    return RateLimit(
        requests_per_minute=None
        if limit.requests_per_minute is None
        else limit.requests_per_minute / shards,
        tokens_per_minute=None
        if limit.tokens_per_minute is None
        else limit.tokens_per_minute / shards,
    )


def shard_config(config: JudgeConfig, shards: int) -> JudgeConfig:
    """The configuration one of `shards` shards runs with: the per-minute rate limits divided
    by `shards`, and max_concurrency divided (at least 1). Cache keys do not change."""
    settings = config.settings.model_copy(
        update={
            "rate_limits": {
                name: _divided(limit, shards) for name, limit in config.settings.rate_limits.items()
            },
            "max_concurrency": max(1, config.settings.max_concurrency // shards),
        }
    )
    return dataclasses.replace(config, settings=settings)


def shard_budget(budget_usd: float | None, shards: int) -> float | None:
    """Each shard's part of --budget (the run's total never exceeds it by more than the calls
    in flight, as in a local run)."""
    return None if budget_usd is None else budget_usd / shards


def encode_item(item: PlannedItem) -> dict[str, Any]:
    """A planned submission as JSON data: texts, and per metric its key and reused result."""
    return {
        "item_id": item.item_id,
        "user_query": item.user_query,
        "submission": item.submission,
        "judgements": [
            {
                "metric": j.metric.name,
                "cache_key": j.cache_key,
                "cached": None
                if j.cached is None
                else {k: j.cached.get(k) for k in SHARED_ROW_FIELDS},
                "copied": j.copied,
            }
            for j in item.judgements
        ],
    }


def decode_item(data: dict[str, Any], config: JudgeConfig) -> PlannedItem:
    """`encode_item`'s output back as a PlannedItem of `config`'s metrics.

    Raises:
        ValueError: the data names a metric `config` does not have (another configuration).
    """
    metrics = {m.name: m for m in config.metrics}
    item = PlannedItem(data["item_id"], data["user_query"], data["submission"])
    for entry in data["judgements"]:
        metric = metrics.get(entry["metric"])
        if metric is None:
            raise ValueError(
                f"shard input names metric {entry['metric']!r}, which {config.source} does not "
                f"list ({', '.join(metrics)}); run the shard with the run's configuration"
            )
        judgement = PlannedJudgement(metric, entry["cache_key"], entry["cached"])
        judgement.copied = bool(entry["copied"])
        item.judgements.append(judgement)
    return item


class SharedStopControl(RunControl):
    """A shard's RunControl: an auth or quota error or the circuit breaker also writes the stop
    file, and a shard that finds the file starts no new call (its stop does not fail the run by
    itself; the shard that wrote the file does)."""

    def __init__(
        self, config: JudgeConfig, budget_usd: float | None, stop_file: str | Path
    ) -> None:
        super().__init__(config, budget_usd, batch=False)
        self._stop_file = Path(stop_file)

    def stop(self, reason: str, *, fails_run: bool) -> None:
        """Stop this shard; a failing stop also tells the other shards."""
        first = self.stop_reason is None
        super().stop(reason, fails_run=fails_run)
        if first and fails_run:
            partial = self._stop_file.with_name(f"{self._stop_file.name}.{os.getpid()}.partial")
            partial.write_text(reason, encoding="utf-8")
            partial.replace(self._stop_file)

    async def acquire(self, model: str, tokens: int) -> bool:
        """As RunControl's, after checking whether another shard has stopped the run."""
        if self.stop_reason is None and self._stop_file.exists():
            reason = self._stop_file.read_text(encoding="utf-8")
            super().stop(f"another shard stopped the run: {reason}", fails_run=False)
        return await super().acquire(model, tokens)
