"""Judging one submission: its metrics in order (seed FR-014), each reused, scored locally or
called, and its overall score. The one path both entry points take: a live judge run (every
stored submission, results into DuckDB) and the in-memory `Evaluator` (one request).
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pipelines.judge.calls import Outcome
from transforms.judge.evaluator_models import overall_score
from transforms.judge.keys import score_key
from transforms.judge.plan import PlannedItem, PlannedJudgement

__all__ = ["Call", "Record", "judge_submission", "local_outcome", "outcome_of_row", "overall_row"]

Call = Callable[[PlannedItem, PlannedJudgement], Awaitable[Outcome | None]]
"""Judges one LLM metric of a submission; None when the run stopped before the call."""
Reuse = Callable[[PlannedItem, PlannedJudgement], Outcome | None]
"""A judgement known already (stored, or copied from identical texts), else None."""
Record = Callable[[PlannedItem, PlannedJudgement, Outcome], Awaitable[None]]
"""Takes each new outcome as it is known (the live run writes it)."""


def _score_of(scored: Any) -> tuple[float, str] | str:
    """(score, comment) of what a metric's `score()` returned, or why it is not a score."""
    comment = getattr(scored, "comment", getattr(scored, "evaluator_comment", None))
    score = getattr(scored, "score", None)
    if isinstance(score, bool) or not isinstance(score, int | float) or comment is None:
        return (
            f"score() returned {scored!r:.200}, not a RuleScore(score, comment); "
            "return tracegrade.judge.RuleScore"
        )
    if not math.isfinite(score):
        return f"score() returned the score {score}, which is not a number in 0..100"
    return float(score), str(comment)


def local_outcome(item: PlannedItem, judgement: PlannedJudgement) -> Outcome | None:
    """Outcomes needing no call: a blank submission, or a non-LLM metric. A metric whose own
    code raises, or returns something that is not a score, is a `metric_error` of that metric
    alone."""
    if item.blank:
        return Outcome(
            "invalid_input", error="the submission is empty or whitespace only; nothing to judge"
        )
    metric = judgement.metric.metric
    if metric.uses_llm:
        return None
    started = time.perf_counter()
    try:
        found = _score_of(metric.score(item.user_query, item.submission))
    except Exception as exc:
        found = f"{type(exc).__name__}: {exc}"
    latency = (time.perf_counter() - started) * 1000.0
    if isinstance(found, str):
        error = f"{type(metric).__name__}.{found}" if found.startswith("score()") else found
        return Outcome("metric_error", error=error[:500], latency_ms=latency)
    score, comment = found
    if not 0.0 <= score <= 100.0:
        return Outcome("parse_error", error=f"score {score} is outside 0..100", latency_ms=latency)
    return Outcome("ok", score, comment, latency_ms=latency)


def outcome_of_row(row: dict[str, Any]) -> Outcome:
    """A stored (or copied) result row as an outcome."""
    return Outcome(row["status"], row["score"], row["comment"], row["error"])


async def judge_submission(
    item: PlannedItem,
    call: Call,
    *,
    reuse: Reuse | None = None,
    record: Record | None = None,
    stop_on_failure: bool = False,
) -> list[Outcome] | None:
    """The outcome of each of the item's metrics, in order: reused, else scored locally (a
    blank submission, a non-LLM metric), else called.

    Args:
        item: the submission and its planned judgements.
        call: judges one LLM metric (with its retries).
        reuse: a judgement known already; reused ones are not recorded.
        record: takes each new outcome before the next metric starts.
        stop_on_failure: return after the first metric that is not ok (the Evaluator: FR-010
            raises on it, so the metrics after it would be calls for nothing).

    Returns:
        The outcomes (fewer than the metrics after a failure with `stop_on_failure`), or None
        when the run stopped before a call.
    """
    outcomes: list[Outcome] = []
    for judgement in item.judgements:
        known = None if reuse is None else reuse(item, judgement)
        if known is None:
            outcome = local_outcome(item, judgement) or await call(item, judgement)
            if outcome is None:
                return None
            if record is not None:
                await record(item, judgement, outcome)
            known = outcome
        outcomes.append(known)
        if stop_on_failure and known.status != "ok":
            break
    return outcomes


def _overall_status(statuses: set[str]) -> str:
    """ok; invalid_input when the input was rejected without a call (nothing to retry);
    failed when any judgement failed after its attempts."""
    if statuses <= {"ok"}:
        return "ok"
    return "invalid_input" if statuses <= {"ok", "invalid_input"} else "failed"


def overall_row(
    item: PlannedItem, outcomes: list[Outcome], identity: dict[str, Any]
) -> dict[str, Any]:
    """The overall score row of a submission whose every metric has an outcome."""
    judgements = item.judgements
    weights = [j.metric.weight for j in judgements]
    pairs = list(zip(judgements, outcomes, strict=True))
    key = score_key([f"{j.cache_key}:{o.status}" for j, o in pairs], weights)
    failed = [j.metric.name for j, o in pairs if o.status != "ok"]
    overall = None
    if not failed:
        overall = overall_score(weights, [float(o.score or 0.0) for o in outcomes])
    errors = [f"{j.metric.name}: {o.status}: {o.error}" for j, o in pairs if o.status != "ok"]
    return {
        **identity,
        "item_id": item.item_id,
        "score_key": key,
        "status": _overall_status({o.status for o in outcomes}),
        "overall_score": overall,
        "failed_metrics": failed,
        "error": "; ".join(errors)[:2000] if errors else None,
    }
