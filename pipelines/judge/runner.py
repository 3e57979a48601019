"""A live judge run: submissions concurrently, the metrics of each in order, every result
written as it finishes.

Concurrency is bounded by `max_concurrency` and by a per-provider rate limit (requests and
tokens per minute) shared by all calls. The run stops starting calls after an authentication or
quota error, after `circuit_breaker` failed judgements in a row, or when `budget_usd` is spent.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from pipelines.judge.calls import ModelFactory, Outcome, default_model_factory, judge_call
from pipelines.judge.control import RunControl
from pipelines.judge.results import JudgeRunResult
from pipelines.progress import stage_progress
from transforms.judge.keys import score_key
from transforms.judge.plan import (
    JudgeSink,
    PlannedItem,
    PlannedJudgement,
    cost_usd,
    estimated_tokens,
)
from transforms.judge.resolve import JudgeConfig

__all__ = [
    "copied_row",
    "local_outcome",
    "overall_row",
    "result_row",
    "run_live",
]


class _Writer:
    """Buffers rows for at most one turn of the event loop, then inserts them together."""

    def __init__(self, sink: JudgeSink) -> None:
        self._sink = sink
        self._results: list[dict[str, Any]] = []
        self._scores: list[dict[str, Any]] = []
        self._scheduled = False

    def add(
        self, result: dict[str, Any] | None = None, score: dict[str, Any] | None = None
    ) -> None:
        if result is not None:
            self._results.append(result)
        if score is not None:
            self._scores.append(score)
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        self._scheduled = False
        results, self._results = self._results, []
        scores, self._scores = self._scores, []
        self._sink.write_results(results)
        self._sink.write_scores(scores)


def _overall_status(rows: list[dict[str, Any]]) -> str:
    """ok; invalid_input when the input was rejected without a call (nothing to retry);
    failed when any judgement failed after its attempts."""
    statuses = {row["status"] for row in rows}
    if statuses <= {"ok"}:
        return "ok"
    return "invalid_input" if statuses <= {"ok", "invalid_input"} else "failed"


def overall_row(
    item: PlannedItem, rows: list[dict[str, Any]], identity: dict[str, Any]
) -> dict[str, Any]:
    """The overall score row of a submission whose every metric has a result."""
    weights = [j.metric.weight for j in item.judgements]
    failed = [row["metric"] for row in rows if row["status"] != "ok"]
    key = score_key([f"{r['cache_key']}:{r['status']}" for r in rows], weights)
    overall = None
    if not failed:
        total = sum(weights)
        overall = sum(w * float(r["score"]) for w, r in zip(weights, rows, strict=True)) / total
    errors = [f"{r['metric']}: {r['status']}: {r['error']}" for r in rows if r["status"] != "ok"]
    return {
        **identity,
        "item_id": item.item_id,
        "score_key": key,
        "status": _overall_status(rows),
        "overall_score": overall,
        "failed_metrics": failed,
        "error": "; ".join(errors)[:2000] if errors else None,
    }


def result_row(
    judgement: PlannedJudgement, outcome: Outcome, identity: dict[str, Any], cost: float | None
) -> dict[str, Any]:
    metric = judgement.metric
    return {
        **identity,
        "metric": metric.name,
        "cache_key": judgement.cache_key,
        "status": outcome.status,
        "score": outcome.score,
        "comment": outcome.comment,
        "error": outcome.error,
        "model": metric.model,
        "prompt_version": type(metric.metric).prompt_version,
        "parameters": metric.parameters,
        "input_tokens": outcome.input_tokens,
        "output_tokens": outcome.output_tokens,
        "latency_ms": outcome.latency_ms,
        "attempts": outcome.attempts,
        "cost_usd": cost,
    }


def copied_row(judgement: PlannedJudgement, identity: dict[str, Any]) -> dict[str, Any]:
    """This submission's row for a judgement reused from an identical one (no call, no cost)."""
    cached = judgement.cached or {}
    outcome = Outcome(cached["status"], cached["score"], cached["comment"], cached["error"])
    return result_row(judgement, outcome, identity, 0.0)


def local_outcome(item: PlannedItem, judgement: PlannedJudgement) -> Outcome | None:
    """Outcomes needing no call: a blank submission, or a non-LLM metric."""
    if item.blank:
        return Outcome(
            "invalid_input", error="the submission is empty or whitespace only; nothing to judge"
        )
    if judgement.metric.metric.uses_llm:
        return None
    started = time.perf_counter()
    try:
        scored = judgement.metric.metric.score(item.user_query, item.submission)
    except Exception as exc:
        return Outcome("provider_error", error=f"{type(exc).__name__}: {exc}"[:500])
    latency = (time.perf_counter() - started) * 1000.0
    if not 0.0 <= scored.score <= 100.0:
        return Outcome(
            "parse_error", error=f"score {scored.score} is outside 0..100", latency_ms=latency
        )
    return Outcome("ok", scored.score, scored.comment, latency_ms=latency)


@dataclass
class _LiveRun:
    """What every submission of a live run shares: configuration, run control, the writer,
    the stored score keys, the result, and the judgements in flight by cache key."""

    config: JudgeConfig
    control: RunControl
    writer: _Writer
    identity: dict[str, Any]
    factory: ModelFactory
    stored_keys: dict[str, str]
    result: JudgeRunResult
    shared: dict[str, asyncio.Future[Outcome | None]] = field(default_factory=dict)

    async def judge_item(self, item: PlannedItem) -> None:
        """Judge one submission's metrics in order, write each result, then its overall score;
        stops (leaving the submission for the next run) when the run stopped."""
        result = self.result
        rows: list[dict[str, Any]] = []
        ident = {**self.identity, "item_id": item.item_id}
        for judgement in item.judgements:
            if judgement.cached is not None:
                result.cached += 1
                if judgement.copied:
                    row = copied_row(judgement, ident)
                    self.writer.add(result=row)
                    rows.append(row)
                else:
                    rows.append(judgement.cached)
                continue
            outcome = await self._outcome(item, judgement)
            if outcome is None:
                return
            result.statuses[outcome.status] += 1
            model = judgement.metric.model
            cost = None
            if model is not None:
                tokens = (outcome.input_tokens, outcome.output_tokens)
                cost = cost_usd(self.config, model, *tokens, batch=False)
            row = result_row(judgement, outcome, ident, cost)
            self.writer.add(result=row)
            rows.append(row)
            # Let the flush run before this submission's next call: at most one unwritten
            # result per submission, the one in flight.
            await asyncio.sleep(0)
        score = overall_row(item, rows, self.identity)
        if self.stored_keys.get(item.item_id) != score["score_key"]:
            self.writer.add(score=score)
        result.tally(score["status"])

    async def _outcome(self, item: PlannedItem, judgement: PlannedJudgement) -> Outcome | None:
        """The judgement's outcome: local (no call), the identical one another submission is
        judging, or called; None when the run stopped before it."""
        outcome = local_outcome(item, judgement)
        if outcome is not None:
            return outcome
        if judgement.cache_key in self.shared:
            # Another submission of this run with the same texts is judging this already.
            first = await self.shared[judgement.cache_key]
            if first is None:
                return None
            self.result.cached += 1
            return Outcome(first.status, first.score, first.comment, first.error)
        if self.control.stop_reason is not None:
            return None
        future: asyncio.Future[Outcome | None] = asyncio.get_running_loop().create_future()
        self.shared[judgement.cache_key] = future
        tokens_in, tokens_out = estimated_tokens(
            judgement.metric, item, self.config.settings.estimated_output_tokens
        )
        called: Outcome | None = None
        try:
            called = await judge_call(
                judgement.metric,
                item.user_query,
                item.submission,
                factory=self.factory,
                policy=self.config.settings.retry,
                gate=self.control,
                estimated_tokens=tokens_in + tokens_out,
            )
        finally:
            future.set_result(called)
        if called is not None:
            self.result.calls += 1
            self.result.attempts += called.attempts
            self.control.settled(called)
        return called


async def run_live(
    items: list[PlannedItem],
    config: JudgeConfig,
    sink: JudgeSink,
    identity: dict[str, Any],
    *,
    factory: ModelFactory | None = None,
    budget_usd: float | None = None,
    control: RunControl | None = None,
) -> JudgeRunResult:
    """Judge the planned items; `identity` (run_id, run_seq, source, mode, config_hash) is
    written on every row. `control` replaces the run's own RunControl (a shard's, which also
    stops when another shard has stopped)."""
    if control is None:
        control = RunControl(config, budget_usd, batch=False)
    writer = _Writer(sink)
    result = JudgeRunResult(submissions=len(items))
    live = _LiveRun(
        config,
        control,
        writer,
        identity,
        factory or default_model_factory,
        sink.stored_score_keys([item.item_id for item in items]),
        result,
    )
    semaphore = asyncio.Semaphore(config.settings.max_concurrency)
    advance = stage_progress("judge", len(items))

    async def one(item: PlannedItem) -> None:
        async with semaphore:
            await live.judge_item(item)
            advance(1)

    try:
        async with asyncio.TaskGroup() as group:
            for item in items:
                group.create_task(one(item))
    finally:
        writer.flush()
    done = result.submissions_ok + result.submissions_failed + result.submissions_rejected
    result.submissions_left = result.submissions - done
    result.cost_usd = control.cost
    result.stop_reason = control.stop_reason
    result.stop_fails_run = control.stop_fails_run
    return result
