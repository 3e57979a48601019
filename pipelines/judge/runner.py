"""A live judge run: submissions concurrently, the metrics of each in order, every result
written as it finishes.

Concurrency is bounded by `max_concurrency` and by a per-provider rate limit (requests and
tokens per minute) shared by all calls. The run stops starting calls after an authentication or
quota error, after `circuit_breaker` failed judgements in a row, or when `budget_usd` is spent.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from pipelines.judge.calls import ModelFactory, Outcome, default_model_factory, judge_call
from pipelines.judge.control import RunControl
from pipelines.judge.models import judge_model_factory
from pipelines.judge.results import JudgeRunResult
from pipelines.judge.submission import judge_submission, outcome_of_row, overall_row
from pipelines.progress import stage_progress
from transforms.judge.plan import (
    JudgeSink,
    PlannedItem,
    PlannedJudgement,
    cost_usd,
    estimated_tokens,
)
from transforms.judge.resolve import JudgeConfig

__all__ = ["copied_row", "result_row", "run_live"]


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
    settled: dict[str, Outcome] = field(default_factory=dict)
    """The ok outcomes of this run's judgements by cache key, for near-duplicates to share."""

    async def judge_item(self, item: PlannedItem) -> None:
        """Judge one submission's metrics in order, write each result, then its overall score;
        stops (leaving the submission for the next run) when the run stopped."""
        outcomes = await judge_submission(item, self._call, reuse=self._reuse, record=self._record)
        if outcomes is None:
            return
        score = overall_row(item, outcomes, self.identity)
        if self.stored_keys.get(item.item_id) != score["score_key"]:
            self.writer.add(score=score)
        self.result.tally(score["status"])

    def _reuse(self, item: PlannedItem, judgement: PlannedJudgement) -> Outcome | None:
        """A stored result; one copied from another submission is stored again for this one,
        and one shared from a near-duplicate answer (judged first) is stored under this one
        saying so. None where neither is known (a near-duplicate's judgement that failed is
        then called for this answer)."""
        ident = {**self.identity, "item_id": item.item_id}
        if judgement.cached is None:
            leader = self.settled.get(judgement.share_key or "")
            if leader is None:
                return None
            shared = Outcome(leader.status, leader.score, leader.comment, leader.error)
            row = result_row(judgement, shared, ident, 0.0)
            self.writer.add(result={**row, "shared_from": item.shared_from})
            self.result.shared += 1
            return shared
        self.result.cached += 1
        if judgement.copied:
            self.writer.add(result=copied_row(judgement, ident))
        known = outcome_of_row(judgement.cached)
        self._settle(judgement, known)
        return known

    def _settle(self, judgement: PlannedJudgement, outcome: Outcome) -> None:
        if outcome.status == "ok":
            self.settled[judgement.cache_key] = outcome

    async def _record(
        self, item: PlannedItem, judgement: PlannedJudgement, outcome: Outcome
    ) -> None:
        """Count and write a new outcome."""
        self.result.statuses[outcome.status] += 1
        model = judgement.metric.model
        cost = None
        if model is not None:
            tokens = (outcome.input_tokens, outcome.output_tokens)
            cost = cost_usd(self.config, model, *tokens, batch=False)
        ident = {**self.identity, "item_id": item.item_id}
        self.writer.add(result=result_row(judgement, outcome, ident, cost))
        self._settle(judgement, outcome)
        # Let the flush run before this submission's next call: at most one unwritten result
        # per submission, the one in flight.
        await asyncio.sleep(0)

    async def _call(self, item: PlannedItem, judgement: PlannedJudgement) -> Outcome | None:
        """The judgement's outcome: the identical one another submission is judging, or
        called; None when the run stopped before it."""
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


def _details(result: JudgeRunResult, control: RunControl) -> str:
    """Judgements by status, calls, tokens and cost so far, for a progress line."""
    ok = result.statuses.get("ok", 0) + result.cached
    failed = {k: v for k, v in sorted(result.statuses.items()) if k != "ok" and v}
    by_status = f" ({', '.join(f'{k} {v}' for k, v in failed.items())})" if failed else ""
    return (
        f"judgements ok {ok}, failed {sum(failed.values())}{by_status}; calls {result.calls}; "
        f"tokens {control.input_tokens} in, {control.output_tokens} out; "
        f"cost ${control.cost:.4f}"
    )


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
        factory or judge_model_factory(config.settings.endpoints, default_model_factory),
        sink.stored_score_keys([item.item_id for item in items]),
        result,
    )
    semaphore = asyncio.Semaphore(config.settings.max_concurrency)
    advance = stage_progress("judge", len(items), lambda: _details(result, control))

    async def one(item: PlannedItem) -> None:
        async with semaphore:
            await live.judge_item(item)
            advance(1)

    try:
        # answers that share a near-duplicate's judgements go once those are known
        for wave in (
            [i for i in items if i.shared_from is None],
            [i for i in items if i.shared_from],
        ):
            async with asyncio.TaskGroup() as group:
                for item in wave:
                    group.create_task(one(item))
    finally:
        writer.flush()
    done = result.submissions_ok + result.submissions_failed + result.submissions_rejected
    result.submissions_left = result.submissions - done
    result.cost_usd = control.cost
    result.stop_reason = control.stop_reason
    result.stop_fails_run = control.stop_fails_run
    return result
