"""bench_phoenix: `tracegrade pull phoenix` and `push phoenix` against a real local Phoenix
holding 100,000 spans, beside Phoenix's own bulk export of the same spans (issue 44).

A fresh Phoenix 20.26.1 (SQLite, from .venv-phoenix: `make phoenix`) is started on 127.0.0.1
and given 10,000 synthetic agent traces of 10 spans each over OTLP/HTTP (a root AGENT span, four
LLM and TOOL pairs, one tool call in six failing, a final LLM span; OpenInference attributes).
Then, in one run on this machine:

- Phoenix's own bulk export: its client's `spans.get_spans_dataframe(project_identifier=...)`
  (arize-phoenix-client, in Phoenix's environment), every span into a pandas DataFrame;
- the REST API's pages alone (1,000 spans a page, what a pull reads; no storing);
- `tracegrade pull phoenix`: pages read and kept in DuckDB, the complete traces written as a
  page file and scored (value scores and derived levels, `--no-embedder`);
- a second pull with nothing new (one page);
- `tracegrade push phoenix`: value score and level on each of the 10,000 root spans (20,000
  annotations, 100 a request);
- `tracegrade push otlp`: the same verdicts as `gen_ai.evaluation.result` events to Phoenix's
  OTLP endpoint.

Rates are spans per second (the push: root spans annotated per second, with annotations per
second beside). Nothing here is asserted.

    make phoenix && .venv/bin/python bench/bench_phoenix.py
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from _common import OUT_DIR, add_common_args, begin, end, save_result

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

from phoenix_server import free_port, phoenix_serving  # noqa: E402

PROJECT = "bench-agent"
SPANS_PER_TRACE = 10
_EXPORT_JS = """
import sys, time
from phoenix.client import Client
started = time.perf_counter()
frame = Client(base_url=sys.argv[1]).spans.get_spans_dataframe(
    project_identifier=sys.argv[2], limit=int(sys.argv[3]), timeout=600)
print(len(frame), time.perf_counter() - started)
"""


def _attrs(pairs: dict[str, Any]) -> list[Any]:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    return [
        KeyValue(
            key=k,
            value=AnyValue(int_value=v) if isinstance(v, int) else AnyValue(string_value=str(v)),
        )
        for k, v in pairs.items()
    ]


def _trace(number: int, rng: random.Random, start_ns: int) -> list[Any]:
    """One agent run as OTLP spans: root AGENT, four LLM + TOOL pairs, a final LLM span."""
    from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

    trace_id = rng.randbytes(16)
    root_id = rng.randbytes(8)
    t = start_ns + number * 1_000_000
    spans = []
    question = f"What is the status of order {number}?"
    for step in range(4):
        llm_id, tool_id = rng.randbytes(8), rng.randbytes(8)
        spans.append(
            Span(
                trace_id=trace_id, span_id=llm_id, parent_span_id=root_id, name="llm",
                start_time_unix_nano=t + step * 40_000, end_time_unix_nano=t + step * 40_000 + 15_000,
                attributes=_attrs({
                    "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
                    "input.value": question, "output.value": f"I will call lookup_order ({step}).",
                    "llm.token_count.prompt": 120, "llm.token_count.completion": 20,
                }),
            )
        )  # fmt: skip
        failed = rng.random() < 1 / 6
        spans.append(
            Span(
                trace_id=trace_id, span_id=tool_id, parent_span_id=root_id, name="lookup_order",
                start_time_unix_nano=t + step * 40_000 + 16_000,
                end_time_unix_nano=t + step * 40_000 + 30_000,
                attributes=_attrs({
                    "openinference.span.kind": "TOOL", "tool.name": "lookup_order",
                    "input.value": json.dumps({"order": number, "attempt": step}),
                    "output.value": "error: timeout" if failed else json.dumps({"status": "shipped"}),
                }),
                status=Status(code=Status.STATUS_CODE_ERROR if failed else Status.STATUS_CODE_OK),
            )
        )  # fmt: skip
    spans.append(
        Span(
            trace_id=trace_id, span_id=rng.randbytes(8), parent_span_id=root_id, name="llm",
            start_time_unix_nano=t + 170_000, end_time_unix_nano=t + 190_000,
            attributes=_attrs({
                "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
                "output.value": f"Order {number} has shipped.",
            }),
        )
    )  # fmt: skip
    spans.append(
        Span(
            trace_id=trace_id, span_id=root_id, name="agent", start_time_unix_nano=t,
            end_time_unix_nano=t + 200_000,
            attributes=_attrs({
                "openinference.span.kind": "AGENT", "input.value": question,
                "output.value": f"Order {number} has shipped.",
            }),
            status=Status(code=Status.STATUS_CODE_OK),
        )
    )  # fmt: skip
    return spans


def _send(endpoint: str, traces: int) -> float:
    """Send `traces` synthetic traces to Phoenix, 100 traces a request; wait until Phoenix
    has stored every span; the seconds that took."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.resource.v1.resource_pb2 import Resource
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans

    rng = random.Random(0)
    resource = Resource(
        attributes=[
            KeyValue(key="openinference.project.name", value=AnyValue(string_value=PROJECT))
        ]
    )
    start_ns = time.time_ns() - 3_600 * 10**9
    started = time.perf_counter()
    with httpx.Client(timeout=120) as client:
        for first in range(0, traces, 100):
            spans = [
                s for n in range(first, min(first + 100, traces)) for s in _trace(n, rng, start_ns)
            ]
            body = ExportTraceServiceRequest(
                resource_spans=[
                    ResourceSpans(resource=resource, scope_spans=[ScopeSpans(spans=spans)])
                ]
            ).SerializeToString()
            while True:  # Phoenix answers 503 while its insert queue is full: wait, resend
                sent = client.post(
                    f"{endpoint}/v1/traces",
                    content=body,
                    headers={"Content-Type": "application/x-protobuf"},
                )
                if sent.status_code != 503:
                    sent.raise_for_status()
                    break
                time.sleep(2)
        query = "{ projects { edges { node { name recordCount } } } }"
        while True:
            answer = client.post(f"{endpoint}/graphql", json={"query": query}).json()
            counts = {
                e["node"]["name"]: e["node"]["recordCount"]
                for e in answer["data"]["projects"]["edges"]
            }
            if counts.get(PROJECT, 0) >= traces * SPANS_PER_TRACE:
                return time.perf_counter() - started
            time.sleep(1)


def _pages_only(endpoint: str) -> tuple[int, float]:
    from pipelines.phoenix_api import PhoenixApi

    started, count, cursor = time.perf_counter(), 0, None
    with PhoenixApi(endpoint) as api:
        while True:
            spans, cursor = api.spans_page(PROJECT, cursor)
            count += len(spans)
            if cursor is None:
                return count, time.perf_counter() - started


def _row(name: str, items: int, seconds: float, baseline: float) -> dict[str, Any]:
    rate = items / seconds if seconds else 0.0
    return {
        "what": name,
        "items": items,
        "seconds": round(seconds, 2),
        "per_s": round(rate),
        "vs_export": round(rate / baseline, 3) if baseline else None,
    }


def _timed(call: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    result = call()
    return result, time.perf_counter() - started


def _tracegrade_rows(endpoint: str, db: Path, spans: int, baseline: float) -> tuple[list[Any], str]:
    """Pull, pull again, push phoenix, push otlp: their rows, and what each said."""
    from pipelines.phoenix import pull_phoenix, push_otlp, push_phoenix

    def pull() -> Any:
        return pull_phoenix(endpoint, PROJECT, str(db), quiet_s=0.0, no_embedder=True)

    pulled, pull_s = _timed(pull)
    assert pulled.run is not None
    again, again_s = _timed(pull)
    assert again.traces == 0
    pushed, push_s = _timed(lambda: push_phoenix(endpoint, PROJECT, str(db)))
    (sent, events), otlp_s = _timed(lambda: push_otlp(endpoint, str(db), project=PROJECT))
    rows = [
        _row("tracegrade pull phoenix (kept + scored)", pulled.spans, pull_s, baseline),
        _row(
            "  of which the scoring run", pulled.spans, sum(pulled.run.timings.values()), baseline
        ),
        _row("second pull, nothing new (spans held)", spans, again_s, baseline),
        _row("tracegrade push phoenix (annotated spans)", pushed.spans, push_s, baseline),
        _row("  annotations written", pushed.written, push_s, baseline),
        _row("tracegrade push otlp (evaluated spans)", sent, otlp_s, baseline),
        _row("  gen_ai.evaluation.result events", events, otlp_s, baseline),
    ]
    return rows, f"pull: {pulled.text}\npush: {pushed.text}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--traces", type=int, default=10_000, help="traces of 10 spans (default 10,000)"
    )
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv-phoenix")
    add_common_args(parser)
    args = parser.parse_args()

    info, load = begin("bench_phoenix: pull and push against a local Phoenix", args)
    work = OUT_DIR / "phoenix"
    subprocess.run(["rm", "-rf", str(work)], check=True)
    (work / "home").mkdir(parents=True)
    spans = args.traces * SPANS_PER_TRACE
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    with phoenix_serving(args.venv, work / "home", port):
        ingest_s = _send(endpoint, args.traces)
        exported = subprocess.run(
            [str(args.venv / "bin" / "python"), "-c", _EXPORT_JS, endpoint, PROJECT, str(spans * 2)],
            check=True, capture_output=True, text=True,
        ).stdout.split()  # fmt: skip
        export_rows, export_s = int(exported[0]), float(exported[1])
        baseline = export_rows / export_s
        (pages, pages_s) = _pages_only(endpoint)
        rows = [
            _row("Phoenix's bulk export (get_spans_dataframe)", export_rows, export_s, baseline),
            _row("Phoenix ingesting the spans over OTLP/HTTP", spans, ingest_s, baseline),
            _row("REST pages only (what a pull reads)", pages, pages_s, baseline),
        ]
        ours, said = _tracegrade_rows(endpoint, work / "scores.duckdb", spans, baseline)
    rows += ours
    print(f"\n{args.traces:,} traces, {spans:,} spans; rates in items per second, 'vs export' the "
          "rate over Phoenix's bulk export's spans per second\n")  # fmt: skip
    print("| what | items | seconds | per s | vs export |\n|---|---|---|---|---|")
    for row in rows:
        cells = (
            row["what"],
            f"{row['items']:,}",
            row["seconds"],
            f"{row['per_s']:,}",
            row["vs_export"],
        )
        print("| " + " | ".join(str(cell) for cell in cells) + " |")
    print(f"\n{said}")
    end(info, load)
    save_result("phoenix", {"machine": info, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
