"""The in-memory evaluator's run machinery: one request judged through the live run's
per-submission path, the first failed metric raised (seed FR-010), and one background event
loop for the synchronous call.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from pipelines.errors import CustomMetricError, MetricFailedError, ModelCallError
from pipelines.judge.calls import ModelFactory, Outcome, judge_call
from pipelines.judge.control import RunControl
from pipelines.judge.submission import judge_submission
from transforms.judge.evaluator_models import EvaluationResult, MetricScore, overall_score
from transforms.judge.plan import PlannedItem, PlannedJudgement, estimated_tokens, planned_item
from transforms.judge.resolve import JudgeConfig

__all__ = ["evaluate_submission", "run_sync"]

T = TypeVar("T")


def _failure(judgement: PlannedJudgement, outcome: Outcome) -> MetricFailedError:
    metric = judgement.metric
    detail = outcome.error or "no detail"
    if metric.model is None or outcome.status in ("invalid_input", "metric_error"):
        return CustomMetricError(metric_name=metric.name, status=outcome.status, detail=detail)
    return ModelCallError(
        metric_name=metric.name,
        model=metric.model,
        status=outcome.status,
        attempts=outcome.attempts,
        detail=detail,
    )


async def evaluate_submission(
    config: JudgeConfig,
    user_query: str,
    submission: str,
    *,
    factory: ModelFactory,
    gate: RunControl,
) -> EvaluationResult:
    """Every metric of `config` for one submission, in order, with the configured retries.

    Raises:
        ModelCallError: an LLM metric gave no judgement after its attempts (the metrics after
            it are not called).
        CustomMetricError: a metric that needs no model failed.
    """
    item = planned_item("request", user_query, submission, config)
    policy = config.settings.retry

    async def call(item: PlannedItem, judgement: PlannedJudgement) -> Outcome | None:
        tokens_in, tokens_out = estimated_tokens(
            judgement.metric, item, config.settings.estimated_output_tokens
        )
        return await judge_call(
            judgement.metric,
            item.user_query,
            item.submission,
            factory=factory,
            policy=policy,
            gate=gate,
            estimated_tokens=tokens_in + tokens_out,
        )

    outcomes = await judge_submission(item, call, stop_on_failure=True)
    if outcomes is None:  # the gate never stops: it holds no budget and no circuit breaker
        raise RuntimeError("the evaluator's rate limiter refused a call")
    for judgement, outcome in zip(item.judgements, outcomes, strict=False):
        if outcome.status != "ok":
            raise _failure(judgement, outcome)
    scores = [float(outcome.score or 0.0) for outcome in outcomes]
    return EvaluationResult(
        metrics=[
            MetricScore(
                metric_name=judgement.metric.name,
                score=score,
                evaluator_comment=outcome.comment or "",
            )
            for judgement, outcome, score in zip(item.judgements, outcomes, scores, strict=True)
        ],
        overall_score=overall_score([j.metric.weight for j in item.judgements], scores),
    )


_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="tracegrade-evaluator", daemon=True
            )
            thread.start()
            _loop = loop
        return _loop


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """The coroutine's result, run on one event loop kept on a background thread.

    One loop for every synchronous call keeps the provider clients' connections on the loop
    that opened them, and works from code that already runs an event loop (a notebook).
    """
    return asyncio.run_coroutine_threadsafe(coroutine, _background_loop()).result()
