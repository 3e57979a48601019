"""Pull spans from a running Phoenix and score them; push the scores back as annotations
(`tracegrade pull phoenix`, `tracegrade push phoenix`; docs/phoenix.md).

A pull pages through the project's spans newest first, keeping each page with the pull's
place in one transaction (`storage.phoenix.store`), down to the newest span the last pull
kept. The traces that are complete (their root span kept and quiet for `quiet_s`) are written
as one page file beside the database and scored by an ordinary scoring run; only then are
their spans marked delivered. A stop anywhere loses nothing and scores nothing twice: the next
pull continues after the last page kept, and a page file scored again is the same content.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.phoenix_api import OtlpReceiver, PhoenixApi
from storage.phoenix.store import (
    PullState,
    annotation_rows,
    changed_annotations,
    complete_traces,
    keep_page,
    mark_delivered,
    pull_state,
    record_annotations,
    step_rows_of,
    step_targets,
    trace_spans,
    trace_targets,
    traces_not_delivered,
    undelivered_traces,
)
from storage.store.duckdb_store import DuckDBStore
from storage.store.whole_files import replacing
from transforms.otlp_evaluations import evaluation_request
from transforms.phoenix import (
    annotations_of,
    batches,
    is_own_evaluation,
    source_key,
    step_annotations,
)
from transforms.summary import RunSummary

__all__ = ["pull_phoenix", "push_otlp", "push_phoenix"]

QUIET_S = 300.0
"""A trace is complete when its root span is kept and none of its spans ended in this many
seconds before the pull."""
ORPHAN_AFTER_S = 86_400.0
"""A trace whose root span never came is scored once none of its spans ended for this long."""
_ANNOTATIONS_PER_REQUEST = 100


@dataclass
class PullSummary:
    """What one pull did: pages read, spans kept, traces scored and traces still waiting."""

    source: str
    pages: int = 0
    spans: int = 0
    traces: int = 0
    waiting: int = 0
    quiet_s: float = QUIET_S
    file: str | None = None
    run: RunSummary | None = None

    @property
    def text(self) -> str:
        scored = (
            f"{self.traces} complete traces scored from {self.file}"
            if self.file
            else "no complete trace to score"
        )
        return (
            f"pulled {self.spans} new spans in {self.pages} pages from {self.source}; {scored}; "
            f"{self.waiting} traces wait for their root span, or until {self.quiet_s:g} s "
            "passed since their last span ended (--quiet), and are scored by a later pull"
        )


def _pass(
    store: DuckDBStore,
    api: PhoenixApi,
    project: str,
    source: str,
    since: datetime | None,
    summary: PullSummary,
) -> bool:
    """Page down from where the pulls of `source` stand to the newest span already kept.
    True when this pass finished a pull that an earlier one began (newer spans may wait)."""
    state = pull_state(store, source)
    resumed = state.cursor is not None
    cursor = state.cursor
    top = state.top
    while True:
        spans, next_cursor = api.spans_page(project, cursor, since)
        summary.pages += 1
        if top is None:
            top = max((span.rowid for span in spans), default=state.high_water)
        reached = next_cursor is None or any(span.rowid <= state.high_water for span in spans)
        after = (
            PullState(high_water=max(top, state.high_water))
            if reached
            else PullState(state.high_water, top, next_cursor)
        )
        agents = [span for span in spans if not is_own_evaluation(span)]
        summary.spans += sum(span.rowid > state.high_water for span in agents)
        keep_page(store, source, agents, state.high_water, after, datetime.now(UTC))
        store.release()
        if reached:
            return resumed
        cursor = next_cursor


def _folder(store: DuckDBStore) -> Path:
    """Where pulls leave their page files: `<database>.phoenix/` beside the database."""
    return Path(f"{store.path}.phoenix")


def _page_file(folder: Path, project: str, spans: list[dict[str, Any]]) -> Path:
    """The complete traces' spans as one page of Phoenix's REST API, named by its content (the
    same delivery, made again after a stop, is the same file: its scoring run is free)."""
    text = json.dumps({"data": spans, "next_cursor": None}, default=str)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{''.join(c if c.isalnum() else '-' for c in project)}-{digest}.json"
    if not path.exists():
        with replacing(path) as partial:
            partial.write_text(text + "\n")
    return path


def pull_phoenix(
    endpoint: str,
    project: str,
    db: str,
    *,
    since: datetime | None = None,
    quiet_s: float = QUIET_S,
    orphan_after_s: float = ORPHAN_AFTER_S,
    config: str | None = None,
    no_embedder: bool = False,
    confidence_config: str | None = None,
    judge_config: str | None = None,
) -> PullSummary:
    """Pull `project`'s new spans from the Phoenix at `endpoint` into `db` and score its
    complete traces (with `config`, `no_embedder`, `confidence_config` and `judge_config` as
    `pipelines.score.score_traces` takes them)."""
    from pipelines.score import score_traces

    source = source_key(endpoint, project)
    summary = PullSummary(source, quiet_s=quiet_s)
    with DuckDBStore(db) as store, PhoenixApi(endpoint) as api:
        while _pass(store, api, project, source, since, summary):
            pass
        now = datetime.now(UTC)
        traces = complete_traces(
            store, source, now, timedelta(seconds=quiet_s), timedelta(seconds=orphan_after_s)
        )
        summary.waiting = undelivered_traces(store, source) - len(traces)
        if not traces:
            return summary
        path = _page_file(_folder(store), project, trace_spans(store, source, traces))
    summary.file, summary.traces = str(path), len(traces)
    summary.run = score_traces(
        [str(path)],
        db,
        config=config,
        no_embedder=no_embedder,
        confidence_config=confidence_config,
        judge_config=judge_config,
        input_format="otel",
    )
    with DuckDBStore(db) as store:
        mark_delivered(store, source, traces, datetime.now(UTC))
    return summary


@dataclass
class PushSummary:
    """What one push did: annotations written, ones Phoenix has as they are, stored traces
    that no pull of this project delivered (skipped)."""

    source: str
    written: int = 0
    unchanged: int = 0
    spans: int = 0
    skipped: int = 0
    names: dict[str, int] = field(default_factory=dict)

    @property
    def text(self) -> str:
        names = ", ".join(f"{name} {count}" for name, count in sorted(self.names.items()))
        return (
            f"wrote {self.written} annotations on {self.spans} spans of {self.source}"
            f"{f' ({names})' if names else ''}; {self.unchanged} unchanged since the last push; "
            f"skipped {self.skipped} stored traces that no pull of this project delivered"
        )


def _verdicts(
    store: DuckDBStore, source: str | None
) -> tuple[list[dict[str, Any]], dict[str, str], pl.DataFrame]:
    """The annotations of the traces pulls of `source` (None: any) delivered, on the traces'
    spans and their steps' spans; which trace each annotated span is in; the trace targets."""
    targets = trace_targets(store, source)
    rows = annotation_rows(store, targets)
    steps = step_rows_of(store, step_targets(store, source, _folder(store)))
    payloads = annotations_of(rows.iter_rows(named=True))
    payloads += step_annotations(steps.iter_rows(named=True))
    trace_of = dict(zip(rows["span_hex"], rows["trace_hex"], strict=True))
    trace_of.update(zip(steps["span_hex"], steps["trace_hex"], strict=True))
    return payloads, trace_of, targets


def push_phoenix(endpoint: str, project: str, db: str) -> PushSummary:
    """Write the stored scores of `project`'s pulled traces back to the Phoenix at `endpoint`
    as span annotations; an annotation Phoenix already has as it is is not sent again."""
    source = source_key(endpoint, project)
    summary = PushSummary(source)
    with DuckDBStore(db) as store:
        payloads, _, targets = _verdicts(store, source)
        todo = changed_annotations(store, source, payloads)
        summary.skipped = traces_not_delivered(store, targets)
        store.release()
        summary.unchanged = len(payloads) - len(todo)
        with PhoenixApi(endpoint) as api:
            for batch in batches(todo, _ANNOTATIONS_PER_REQUEST):
                api.annotate(batch)
                record_annotations(store, source, batch, datetime.now(UTC))
                store.release()
                summary.written += len(batch)
        for payload in todo:
            summary.names[payload["name"]] = summary.names.get(payload["name"], 0) + 1
        summary.spans = len({payload["span_id"] for payload in todo})
    return summary


_TRACES_PER_EXPORT = 500


def push_otlp(endpoint: str, db: str, *, project: str | None = None) -> tuple[int, int]:
    """Send the verdicts of every pulled trace to the OTLP/HTTP receiver at `endpoint` as
    GenAI evaluation results (`transforms.otlp_evaluations`), `project` as the resource's
    `openinference.project.name` (where Phoenix files them). Returns (spans, events) sent."""
    with DuckDBStore(db) as store:
        payloads, trace_of, _ = _verdicts(store, None)
    by_span: dict[str, list[dict[str, Any]]] = {}
    for item in payloads:
        by_span.setdefault(item["span_id"], []).append(item)
    evaluated = [(trace_of[span], span, items) for span, items in by_span.items()]
    resource = {"service.name": "tracegrade"}
    if project:
        resource["openinference.project.name"] = project
    at_ns = time.time_ns()
    with OtlpReceiver(endpoint) as receiver:
        for part in batches(evaluated, _TRACES_PER_EXPORT):
            receiver.export(evaluation_request(part, at_ns, resource).SerializeToString())
    return len(evaluated), sum(len(items) for _, _, items in evaluated)
