"""Phoenix's REST API as tracegrade reads and writes it (docs/phoenix.md): which spans a pull
keeps, where a pull comes from, and the annotations a push writes. Pure: no HTTP, no disk.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

from transforms.config.scoring import FACTORS
from transforms.errors import PageError
from transforms.otlp_evaluations import EVALUATION_EVENT, EVALUATION_SPAN

__all__ = [
    "LEVEL_ANNOTATION",
    "STEP_ANNOTATION",
    "PulledSpan",
    "annotation",
    "annotations_of",
    "batches",
    "is_own_evaluation",
    "page_spans",
    "source_key",
    "span_rowid",
    "step_annotations",
]

T = TypeVar("T")

ANNOTATION_IDENTIFIER = "tracegrade"
"""Every annotation a push writes carries this identifier: Phoenix keeps one annotation per
(name, span, identifier), so a push run again updates its annotations instead of adding more."""

VALUE_ANNOTATION = "tracegrade.value"
LEVEL_ANNOTATION = "tracegrade.level"
STEP_ANNOTATION = "tracegrade.step_confidence"
_JUDGE_PREFIX = "tracegrade.judge."


@dataclass(frozen=True)
class PulledSpan:
    """One span of a page, with what a pull needs to place it; `span` is the span as Phoenix's
    REST API gave it, kept whole (it is what scoring reads)."""

    rowid: int
    trace_hex: str
    span_hex: str
    parent_hex: str | None
    kind: str | None
    end_time: datetime
    span: Mapping[str, Any]


def source_key(endpoint: str, project: str) -> str:
    """Where a pull comes from, as stored: the endpoint's scheme, host, port and path (never
    its user, password or query, which may hold a key) and the project."""
    parts = urlsplit(endpoint)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path.rstrip('/')}#{project}"


def span_rowid(global_id: object) -> int:
    """Phoenix's row number of a span, from its global id (base64 of `Span:<row>`): rows are
    numbered as Phoenix stores them, so a higher number arrived later."""
    try:
        kind, _, row = base64.b64decode(str(global_id), validate=True).decode().partition(":")
        if kind != "Span" or not row.isdigit():
            raise ValueError(global_id)
        return int(row)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise PageError(f"a span's id {global_id!r} is not a Phoenix span id") from None


def _span(value: object, number: int) -> PulledSpan:
    if not isinstance(value, Mapping):
        raise PageError(f"span {number} of the page is not an object")
    context = value.get("context")
    if (
        not isinstance(context, Mapping)
        or not context.get("trace_id")
        or not context.get("span_id")
    ):
        raise PageError(f"span {number} of the page has no context.trace_id and context.span_id")
    try:
        ended = datetime.fromisoformat(str(value["end_time"]))
    except (KeyError, ValueError):
        raise PageError(f"span {number} of the page has no readable end_time") from None
    if ended.tzinfo is None:
        raise PageError(f"span {number} of the page has an end_time without a time zone")
    parent = value.get("parent_id")
    kind = value.get("span_kind")
    return PulledSpan(
        rowid=span_rowid(value.get("id")),
        trace_hex=str(context["trace_id"]),
        span_hex=str(context["span_id"]),
        parent_hex=str(parent) if parent else None,
        kind=str(kind) if kind else None,
        end_time=ended,
        span=value,
    )


def page_spans(page: object) -> tuple[list[PulledSpan], str | None]:
    """The spans of one page of `GET /v1/projects/{project}/spans` and its next cursor (None on
    the last page). A page that is not one, or a span without its ids, row id or end time,
    raises PageError naming it: the page is kept out whole."""
    if not isinstance(page, Mapping) or not isinstance(page.get("data"), list):
        raise PageError("the answer is not a page of spans (an object with a 'data' list)")
    cursor = page.get("next_cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise PageError(f"the page's next_cursor {cursor!r} is not a string")
    return [_span(value, number) for number, value in enumerate(page["data"], 1)], cursor


def is_own_evaluation(span: PulledSpan) -> bool:
    """True for a span `tracegrade push otlp` sent: a `gen_ai.evaluation` span whose events
    are all `gen_ai.evaluation.result`. A pull leaves these out (they are verdicts, not agent
    work: kept, they would send every trace they sit in to scoring again)."""
    events = span.span.get("events") or []
    return (
        span.span.get("name") == EVALUATION_SPAN
        and bool(events)
        and all(isinstance(e, Mapping) and e.get("name") == EVALUATION_EVENT for e in events)
    )


def judge_annotation_name(metric: str) -> str:
    """The annotation of one judge metric: `tracegrade.judge.<metric>`."""
    return f"{_JUDGE_PREFIX}{metric}"


def _number(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def annotation(
    span_hex: str,
    name: str,
    *,
    kind: str,
    score: Any = None,
    label: str | None = None,
    explanation: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One span annotation as `POST /v1/span_annotations` takes it, with tracegrade's
    identifier (so writing it again updates it)."""
    result = {"score": _number(score), "label": label, "explanation": explanation}
    return {
        "span_id": span_hex,
        "name": name,
        "annotator_kind": kind,
        "identifier": ANNOTATION_IDENTIFIER,
        "result": {key: value for key, value in result.items() if value is not None},
        "metadata": dict(metadata or {}),
    }


def _value(row: Mapping[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    why = ", ".join(f"{part.replace('_', ' ')} {row[part]:.3f}" for part in FACTORS)
    label = "shareable" if row["shareable"] else "not shareable"
    return annotation(
        row["span_hex"],
        VALUE_ANNOTATION,
        kind="CODE",
        score=row["score"],
        label=label,
        explanation=why,
        metadata=meta,
    )


def annotations_of(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The annotations of the traces of `rows` (`storage.phoenix.store.annotation_rows`, one
    row per trace and judge metric): on each trace's span its value score (`tracegrade.value`,
    with its four components), its level with the reason (`tracegrade.level`, the confidence
    as the score), and each judge metric's score and status (`tracegrade.judge.<metric>`)."""
    found: list[dict[str, Any]] = []
    seen: set[str] = set()
    for row in rows:
        span, trace = row["span_hex"], row["trace_id"]
        meta = {"trace_id": trace, "run_id": row["run_id"]}
        if trace not in seen:
            seen.add(trace)
            found.append(_value(row, meta))
            if row["level"] is not None:
                level = {"label": row["level"], "explanation": row["reason"]}
                found.append(
                    annotation(
                        span,
                        LEVEL_ANNOTATION,
                        kind="CODE",
                        score=row["aggregate"],
                        metadata=meta,
                        **level,
                    )
                )
        if row["metric"] is not None:
            judged = {"label": row["judge_status"], "explanation": row["comment"]}
            name = judge_annotation_name(row["metric"])
            found.append(
                annotation(
                    span, name, kind="LLM", score=row["judge_score"], metadata=meta, **judged
                )
            )
    return found


def step_annotations(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`tracegrade.step_confidence` on the span of each step of `rows`
    (`storage.phoenix.store.step_rows_of`): the step's derived confidence as the score, its
    penalties as the label ("no penalty" when none)."""
    found = []
    for row in rows:
        penalties = ", ".join(row["penalties"]) or "no penalty"
        why = f"step {row['step_index']} ({row['step_kind']}): confidence {row['score']:.3f}"
        if row.get("plan_steps", 1) > 1:
            why += f", the lowest of its {row['plan_steps']} plan steps (one per statement line)"
        meta = {"trace_id": row["trace_id"], "run_id": row["run_id"], "step": row["step_index"]}
        found.append(
            annotation(
                row["span_hex"],
                STEP_ANNOTATION,
                kind="CODE",
                score=row["score"],
                label=penalties,
                explanation=why,
                metadata=meta,
            )
        )
    return found


def batches(items: list[T], size: int) -> Iterable[list[T]]:
    """`items` in lists of at most `size`."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
