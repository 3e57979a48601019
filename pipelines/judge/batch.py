"""Batch mode: judgements through the provider batch API (pydantic-ai `Model.batch_*`).

A batch run first collects every batch an earlier run left open (results stored, batch closed),
then submits the judgements that have no result and are in no open batch. Each batch's handle
and requests are stored as soon as the provider accepts it, so a later run (or the
`judge_collect` flow) collects it, and nothing is submitted twice.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

import polars as pl
from pydantic import TypeAdapter
from pydantic_ai.models import Model
from pydantic_ai.models.batch import Batch, BatchRequest

from pipelines.judge.calls import (
    ModelFactory,
    Outcome,
    classify_error,
    default_model_factory,
    judgement_from,
    judgement_request,
)
from pipelines.judge.models import effective_output_mode, judge_model_factory
from pipelines.judge.results import JudgeRunResult
from pipelines.judge.runner import copied_row, result_row
from pipelines.judge.submission import local_outcome, outcome_of_row, overall_row
from transforms.errors import JudgeConfigError
from transforms.judge.metrics import Judgement
from transforms.judge.plan import (
    JudgeSink,
    PlannedItem,
    PlannedJudgement,
    SubmittedBatch,
    cost_usd,
    estimated_tokens,
    plan_items,
)
from transforms.judge.resolve import JudgeConfig, ResolvedMetric

__all__ = ["JudgeRunResult", "batch_items", "run_batch"]

_HANDLE = TypeAdapter(Batch)


class BatchSink(JudgeSink, Protocol):
    """A judge sink that also keeps batch handles."""

    def open_batches(self) -> list[dict[str, Any]]:
        """Batches submitted and not collected, oldest first."""
        ...

    def put_batch(self, batch: SubmittedBatch) -> None:
        """Record a submitted batch."""
        ...

    def close_batch(self, batch_id: str, rows: list[dict[str, Any]]) -> None:
        """Store a batch's results and mark it collected, in one transaction."""
        ...


def _metric(config: JudgeConfig, name: str) -> ResolvedMetric | None:
    return next((m for m in config.metrics if m.name == name), None)


def _request(
    config: JudgeConfig, custom_id: str, meta: dict[str, Any], model: Model
) -> BatchRequest:
    metric = _metric(config, meta["metric"])
    assert metric is not None
    mode = effective_output_mode(metric.output_mode, model)
    messages, settings, parameters = judgement_request(
        metric, meta["user_query"], meta["submission"], timeout_s=None, mode=mode
    )
    return BatchRequest(
        custom_id=custom_id,
        messages=list(messages),
        model_settings=settings,
        model_request_parameters=parameters,
    )


def _decode(model: Model, request: BatchRequest, result: Any) -> Outcome:
    try:
        response = model.batch_decode(result, request)
    except Exception as exc:  # the request's own error (a ModelAPIError, usually)
        attempt = classify_error(exc)
        return Outcome(attempt.status, error=attempt.error, attempts=1)
    found = judgement_from(response, request.model_request_parameters.output_mode)
    usage = response.usage
    if isinstance(found, Judgement):
        outcome = Outcome("ok", found.score, found.comment, attempts=1)
    else:
        outcome = Outcome(found.status, error=found.error, attempts=1)
    outcome.input_tokens, outcome.output_tokens = usage.input_tokens, usage.output_tokens
    return outcome


async def collect_batches(
    config: JudgeConfig,
    sink: BatchSink,
    identity: dict[str, Any],
    factory: ModelFactory,
    result: JudgeRunResult,
) -> dict[str, dict[str, Any]]:
    """Store the results of every open batch that has ended; returns the rows by cache key."""
    rows: dict[str, dict[str, Any]] = {}
    for stored in sink.open_batches():
        model = factory(stored["model"])
        batch = await model.batch_status(_HANDLE.validate_python(stored["handle"]))
        if batch.status != "ended":
            result.batches_pending += 1
            continue
        written = []
        for item in await model.batch_results(batch):
            meta = stored["requests"].get(item.custom_id)
            metric = None if meta is None else _metric(config, meta["metric"])
            if meta is None or metric is None:
                continue
            outcome = _decode(model, _request(config, item.custom_id, meta, model), item)
            cost = cost_usd(
                config, stored["model"], outcome.input_tokens, outcome.output_tokens, batch=True
            )
            result.cost_usd += cost or 0.0
            result.statuses[outcome.status] += 1
            ident = {**identity, "item_id": meta["item_id"], "mode": "batch"}
            row = result_row(
                PlannedJudgement(metric, meta["cache_key"], None), outcome, ident, cost
            )
            rows[meta["cache_key"]] = row
            written.append(row)
        sink.close_batch(stored["batch_id"], written)
        result.batches_collected += 1
    return rows


def batch_items(sink: BatchSink) -> pl.DataFrame:
    """(item_id, user_query, submission) of every request in an open batch."""
    seen: dict[str, tuple[str, str]] = {}
    for stored in sink.open_batches():
        for meta in stored["requests"].values():
            seen[meta["item_id"]] = (meta["user_query"], meta["submission"])
    return pl.DataFrame(
        {
            "item_id": list(seen),
            "user_query": [v[0] for v in seen.values()],
            "submission": [v[1] for v in seen.values()],
        },
        schema={"item_id": pl.String, "user_query": pl.String, "submission": pl.String},
    )


def _pending_keys(sink: BatchSink) -> set[str]:
    return {meta["cache_key"] for b in sink.open_batches() for meta in b["requests"].values()}


async def _submit(
    todo: list[tuple[PlannedItem, Any]],
    config: JudgeConfig,
    sink: BatchSink,
    identity: dict[str, Any],
    factory: ModelFactory,
) -> int:
    """Submit the judgements in `todo`, one batch per model and size limit; returns batches made."""
    by_model: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for number, (item, judgement) in enumerate(todo):
        metric = judgement.metric
        meta = {
            "item_id": item.item_id,
            "metric": metric.name,
            "cache_key": judgement.cache_key,
            "user_query": item.user_query,
            "submission": item.submission,
        }
        by_model.setdefault(metric.model, []).append(
            (f"j{number}-{judgement.cache_key[:16]}", meta)
        )
    made = 0
    for model_name, requests in by_model.items():
        model = factory(model_name)
        if model.batch_max_requests is None:
            raise JudgeConfigError(
                f"model {model_name!r} ({type(model).__name__}) has no batch API in pydantic-ai; "
                'use mode = "live", or a provider with one (e.g. openai, anthropic, google)'
            )
        size = model.batch_max_requests
        for start in range(0, len(requests), size):
            chunk = requests[start : start + size]
            encoded = [
                await model.batch_encode(_request(config, cid, meta, model)) for cid, meta in chunk
            ]
            batch = await model.batch_create(encoded)
            sink.put_batch(
                SubmittedBatch(
                    batch_id=batch.id,
                    run_id=identity["run_id"],
                    model=model_name,
                    handle=_HANDLE.dump_python(batch, mode="json"),
                    requests=dict(chunk),
                )
            )
            made += 1
    return made


class _BatchPlan:
    """What a batch run does with each judgement: reuse, copy, take from a collected batch,
    wait for an open one, score locally, or submit (within the budget)."""

    def __init__(
        self,
        config: JudgeConfig,
        identity: dict[str, Any],
        result: JudgeRunResult,
        fresh: dict[str, dict[str, Any]],
        pending: set[str],
        *,
        submit: bool,
        budget_usd: float | None,
    ) -> None:
        self.config, self.identity, self.result = config, identity, result
        self.fresh, self.pending, self.submit, self.budget_usd = fresh, pending, submit, budget_usd
        self.todo: list[tuple[PlannedItem, Any]] = []
        self.submitting: set[str] = set()
        self.local_rows: list[dict[str, Any]] = []
        self.estimated = 0.0

    def row(self, item: PlannedItem, judgement: PlannedJudgement) -> dict[str, Any] | None:
        """The judgement's result row now, or None when it waits for a batch."""
        identity = {**self.identity, "item_id": item.item_id}
        if judgement.cached is not None:
            self.result.cached += 1
            if not judgement.copied:
                return judgement.cached
            copied = copied_row(judgement, identity)
            self.local_rows.append(copied)
            return copied
        if judgement.cache_key in self.fresh:
            return self.fresh[judgement.cache_key]
        if judgement.cache_key in self.pending or not self.submit:
            return None
        if judgement.cache_key in self.submitting:
            # The same texts are in this submission already: judged once, copied later.
            return None
        started = time.perf_counter()
        outcome = local_outcome(item, judgement)
        if outcome is not None:
            outcome.latency_ms = outcome.latency_ms or (time.perf_counter() - started) * 1000.0
            local = result_row(judgement, outcome, identity, None)
            self.result.statuses[outcome.status] += 1
            self.local_rows.append(local)
            return local
        self._submit_later(item, judgement)
        return None

    def _submit_later(self, item: PlannedItem, judgement: PlannedJudgement) -> None:
        assert judgement.metric.model is not None
        settings = self.config.settings
        tokens = estimated_tokens(judgement.metric, item, settings.estimated_output_tokens)
        cost = cost_usd(self.config, judgement.metric.model, *tokens, batch=True) or 0.0
        if self.budget_usd is not None and self.estimated + cost > self.budget_usd:
            self.result.stop_reason = (
                f"budget of ${self.budget_usd:.4f} reached by estimate; the rest is left for "
                "the next run"
            )
            return
        self.estimated += cost
        self.submitting.add(judgement.cache_key)
        self.todo.append((item, judgement))


async def run_batch(
    frame: pl.DataFrame,
    config: JudgeConfig,
    sink: BatchSink,
    identity: dict[str, Any],
    *,
    factory: ModelFactory | None = None,
    budget_usd: float | None = None,
    submit: bool = True,
) -> JudgeRunResult:
    """Collect ended batches, then (with `submit`) submit what has no result and is in no
    open batch."""
    factory = factory or judge_model_factory(config.settings.endpoints, default_model_factory)
    result = JudgeRunResult(batch=True)
    fresh = await collect_batches(config, sink, identity, factory, result)
    planned = plan_items(frame, config, sink)
    plan = _BatchPlan(
        config,
        identity,
        result,
        fresh,
        _pending_keys(sink),
        submit=submit,
        budget_usd=budget_usd,
    )
    stored_keys = sink.stored_score_keys([item.item_id for item in planned])
    scores: list[dict[str, Any]] = []
    result.submissions = len(planned)
    for item in planned:
        rows = [plan.row(item, judgement) for judgement in item.judgements]
        if any(row is None for row in rows):
            result.submissions_pending += 1
            continue
        outcomes = [outcome_of_row(row) for row in rows if row is not None]
        score = overall_row(item, outcomes, identity)
        if stored_keys.get(item.item_id) != score["score_key"]:
            scores.append(score)
        result.tally(score["status"])
    sink.write_results(plan.local_rows)
    sink.write_scores(scores)
    result.calls = len(plan.todo)
    result.batches_submitted = await _submit(plan.todo, config, sink, identity, factory)
    result.batches_pending += result.batches_submitted
    return result
