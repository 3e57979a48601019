"""tracegrade's verdicts as Langfuse scores (`tracegrade export langfuse-scores`; docs/phoenix.md,
"Langfuse"). Pure: turns the annotations a push would write into bodies of Langfuse's score
API (`POST /api/public/scores`), one per score.

A trace's value score, confidence and judge metrics become NUMERIC trace scores; its level a
CATEGORICAL one; a step's derived confidence a NUMERIC score on the observation the step was
made from. Each has an id derived from the trace, the observation and the name, so a score
sent again updates the one Langfuse has (Langfuse upserts scores by id).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from transforms.phoenix import LEVEL_ANNOTATION, STEP_ANNOTATION

__all__ = ["score_bodies"]

CONFIDENCE_SCORE = "tracegrade.confidence"
_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "tracegrade:langfuse:score")


def _body(
    trace: str, observation: str | None, name: str, value: Any, kind: str, comment: str | None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": str(uuid.uuid5(_NAMESPACE, f"{trace}/{observation or ''}/{name}")),
        "traceId": trace,
        "name": name,
        "value": value,
        "dataType": kind,
    }
    if observation is not None:
        body["observationId"] = observation
    if comment:
        body["comment"] = comment
    return body


def score_bodies(
    annotations: Iterable[Mapping[str, Any]], trace_of: Mapping[str, str], ids: Mapping[str, str]
) -> tuple[list[dict[str, Any]], int]:
    """The score bodies of `annotations` (`transforms.phoenix.annotation` dicts), `trace_of`
    giving each annotated span's trace (hex ids) and `ids` the Langfuse id of each hex id;
    and how many annotations were left out (no score to give: a judgement that failed, or an
    id the export files do not hold)."""
    bodies: list[dict[str, Any]] = []
    left_out = 0
    for item in annotations:
        result, name, span = item["result"], item["name"], item["span_id"]
        trace = ids.get(trace_of.get(span, ""))
        observation = ids.get(span) if name == STEP_ANNOTATION else None
        if (
            trace is None
            or result.get("score") is None
            or (name == STEP_ANNOTATION and observation is None)
        ):
            left_out += 1
            continue
        said = "; ".join(str(p) for p in (result.get("label"), result.get("explanation")) if p)
        if name == LEVEL_ANNOTATION:
            reason = result.get("explanation")
            bodies.append(_body(trace, None, name, result["label"], "CATEGORICAL", reason))
            bodies.append(_body(trace, None, CONFIDENCE_SCORE, result["score"], "NUMERIC", reason))
        else:
            bodies.append(_body(trace, observation, name, result["score"], "NUMERIC", said))
    return bodies, left_out
