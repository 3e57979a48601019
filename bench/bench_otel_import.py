"""Throughput and peak memory of `tracegrade import otel` on a folder of Collector files, and
on the same traces as a Langfuse export.

Generates (once, cached under bench/out/) a folder of OTLP JSON files as the Collector's file
exporter writes them: one ExportTraceServiceRequest a line, 512 spans a line (the SDK's batch
size), about 100,000 spans a file, spans of one trace sometimes split over two lines. Each trace
is a pydantic-ai style agent run: an invoke_agent root span, chat spans whose
gen_ai.input.messages hold the whole history so far, execute_tool spans with arguments and
results, and in one trace of four a failed tool call that the agent retries.

A child process runs pipelines.otel_import.import_otel on the folder, with the allocator
settings the `tracegrade` command sets (tracegrade/cli/__init__.py); this small process reads
the child's peak RSS (RUSAGE_CHILDREN) once it exits and prints spans per second and peak RSS
beside the issue's targets (>= 100,000 spans/s, <= 1 GiB) as ratios. For scale it also times
the official protobuf JSON parser (json_format.Parse) alone on the first file.

With --langfuse it then writes the same traces as Langfuse exports them (the public API's
trace with its full observations, one trace a line, about 100,000 observations a file: each
span an observation of type AGENT, GENERATION or TOOL, the messages, tool arguments and results
as its input and output, a failed call's level ERROR, the other attributes in
metadata.attributes, as Langfuse keeps an OTel span) and imports those in the same run, printed
beside the Collector files' figures and the same targets.

With --langfuse-real the six Langfuse downloads of tests/data/langfuse (six frameworks' runs,
as Langfuse Cloud exported them) are repeated under new trace ids into one file of about as
many observations as asked (200,000 by default: 1.4 GB) and imported the same way. Real
exports hold floats and escaped text that keep their lines off the column-wise reader
(their blocks are parsed in worker processes), and observations of about 7 KB.

With --one-file each folder is also imported as one file holding its files one after the
other (a Collector file exporter without rotation, a single export download): the blocks of
one file are parsed side by side as the files of a folder are.

Run: .venv/bin/python bench/bench_otel_import.py [--n 1000000] [--langfuse] [--one-file]
    [--langfuse-real [N]]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import (
    OUT_DIR,
    Check,
    add_common_args,
    begin,
    end,
    fmt_rate,
    peak_rss_mib,
    print_table,
    save_result,
)
from _langfuse_export import langfuse_trace

TARGET_SPANS_PER_S = 100_000
BUDGET_BYTES = 1024**3
SPANS_PER_LINE = 512
SPANS_PER_FILE = 100_000
_T0 = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z in nanoseconds


def _kv(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def _span(
    ids: tuple[str, str, str],
    name: str,
    start: int,
    dur: int,
    attrs: dict[str, Any],
    error: bool = False,
) -> dict[str, Any]:
    trace, span, parent = ids
    return {
        "traceId": trace,
        "spanId": span,
        "parentSpanId": parent,
        "name": name,
        "kind": 1 if not name.startswith("chat") else 3,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + dur),
        "attributes": [_kv(k, v) for k, v in attrs.items()],
        "status": {"code": 2, "message": "tool failed"} if error else {},
    }


def _text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _chat(ids: tuple[str, str, str], at: int, dur: int, attrs: dict[str, Any]) -> dict[str, Any]:
    return _span(ids, "chat gpt-4o", at, dur, {"gen_ai.operation.name": "chat", **attrs})


def _tool_spans(
    rng: random.Random, ids: tuple[str, str, str], at: int, tool: str, number: int, failed: bool
) -> list[dict[str, Any]]:
    """One execute_tool span, or a failed one and its retry 50 ms later."""
    trace, root, call_id = ids
    common = {
        "gen_ai.agent.name": f"agent-{number % 7}",
        "gen_ai.conversation.id": f"conv-{number}",
    }
    spans = []
    for attempt in range(2 if failed else 1):
        error = failed and attempt == 0
        attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.call.arguments": json.dumps({"item": number % 997}),
            "gen_ai.tool.call.result": "timeout" if error else f"{tool}: ok ({number % 13} units)",
            **common,
        }
        ids3 = (trace, f"{rng.getrandbits(64):016x}", root)
        spans.append(
            _span(ids3, f"execute_tool {tool}", at + attempt * 50_000_000, 30_000_000, attrs, error)
        )
    return spans


def _trace(rng: random.Random, number: int) -> list[dict[str, Any]]:
    """One agent run: root, then (chat, tool) pairs, then the final chat."""
    trace, root = f"{rng.getrandbits(128):032x}", f"{rng.getrandbits(64):016x}"
    start = _T0 + number * 2_000_000_000
    agent = f"agent-{number % 7}"
    question = (
        f"Order {number}: which of our {number % 50} warehouses can ship item {number % 997} "
        "by Friday?"
    )
    answer = f"Warehouse {number % 50} ships item {number % 997} on Thursday."
    history = [_text("system", "You are a logistics assistant."), _text("user", question)]
    common = {"gen_ai.agent.name": agent, "gen_ai.conversation.id": f"conv-{number}"}
    run = {"gen_ai.operation.name": "invoke_agent", **common, "final_result": answer}
    spans = [_span((trace, root, ""), f"invoke_agent {agent}", start, 1_500_000_000, run)]
    calls = 3 + number % 3
    for step in range(calls):
        at = start + step * 300_000_000 + 1
        tool = ("stock_lookup", "shipping_quote", "calendar")[step % 3]
        call = {"type": "tool_call", "id": f"c{step}", "name": tool}
        parts = [{"type": "text", "content": f"Checking {tool} for step {step}."}]
        out = [
            {"role": "assistant", "parts": [*parts, {**call, "arguments": {"item": number % 997}}]}
        ]
        usage = {"gen_ai.usage.input_tokens": 120 + 40 * step, "gen_ai.usage.output_tokens": 25}
        messages = {
            "gen_ai.input.messages": _compact(history),
            "gen_ai.output.messages": _compact(out),
        }
        ids = (trace, f"{rng.getrandbits(64):016x}", root)
        model = {"gen_ai.request.model": "gpt-4o", **messages, **usage}
        spans.append(_chat(ids, at, 150_000_000, {**common, **model}))
        failed = step == 1 and number % 4 == 0
        ids = (trace, root, f"c{step}")
        spans.extend(_tool_spans(rng, ids, at + 160_000_000, tool, number, failed))
        history = history + out
    last = {
        "gen_ai.input.messages": _compact(history),
        "gen_ai.output.messages": _compact([_text("assistant", answer)]),
    }
    ids = (trace, f"{rng.getrandbits(64):016x}", root)
    spans.append(_chat(ids, start + calls * 300_000_000, 120_000_000, {**common, **last}))
    return spans


def _request(spans: list[dict[str, Any]]) -> str:
    resource_attrs = [
        _kv("service.name", "logistics-agents"),
        _kv("telemetry.sdk.language", "python"),
        _kv("telemetry.sdk.name", "opentelemetry"),
    ]
    request = {
        "resourceSpans": [
            {
                "resource": {"attributes": resource_attrs},
                "scopeSpans": [
                    {"scope": {"name": "pydantic-ai", "version": "1.0"}, "spans": spans}
                ],
            }
        ]
    }
    return json.dumps(request, separators=(",", ":"))


def _cached(
    folder: Path, suffix: str, write: Callable[[Path], tuple[int, int, int]]
) -> dict[str, int]:
    """The facts of a generated folder: written once by `write` (it returns the spans,
    traces and files it wrote), then kept, with its marker, for later runs."""
    marker = folder / ".done.json"
    if marker.exists():
        return dict(json.loads(marker.read_text()))
    folder.mkdir(parents=True, exist_ok=True)
    written, traces, files = write(folder)
    size = sum(path.stat().st_size for path in folder.glob(f"traces-*{suffix}"))
    facts = {"spans": written, "traces": traces, "files": files, "bytes": size}
    marker.write_text(json.dumps(facts))
    return facts


def generate_langfuse(folder: Path, n: int, seed: int) -> dict[str, int]:
    """The same traces as `generate`, as Langfuse public-API traces one a line."""

    def write(folder: Path) -> tuple[int, int, int]:
        rng, written, traces, files = random.Random(seed), 0, 0, 0
        handle = None
        while written < n:
            spans = _trace(rng, traces)
            if handle is None or written >= files * SPANS_PER_FILE:
                if handle is not None:
                    handle.close()
                handle = (folder / f"traces-{files:04d}.jsonl").open("w", encoding="utf-8")
                files += 1
            handle.write(json.dumps(langfuse_trace(spans), separators=(",", ":")) + "\n")
            written += len(spans)
            traces += 1
        if handle is not None:
            handle.close()
        return written, traces, files

    return _cached(folder, ".jsonl", write)


def generate(folder: Path, n: int, seed: int) -> dict[str, int]:
    """Write about `n` spans as Collector JSON files into `folder` (kept when already there)."""

    def write(folder: Path) -> tuple[int, int, int]:
        rng, pending, written, traces, files = random.Random(seed), [], 0, 0, 0
        handle = None
        while written < n:
            pending.extend(_trace(rng, traces))
            traces += 1
            while len(pending) >= SPANS_PER_LINE or (written + len(pending) >= n and pending):
                if handle is None or written >= (files * SPANS_PER_FILE):
                    if handle is not None:
                        handle.close()
                    handle = (folder / f"traces-{files:04d}.json").open("w", encoding="utf-8")
                    files += 1
                line, pending = pending[:SPANS_PER_LINE], pending[SPANS_PER_LINE:]
                handle.write(_request(line) + "\n")
                written += len(line)
        if handle is not None:
            handle.close()
        return written, traces, files

    return _cached(folder, ".json", write)


def child(folder: str, out: str) -> None:
    """Import the folder and print one JSON line with the wall time and the summary counts.
    The CLI's package is loaded first, as `tracegrade import otel` loads it: it sets the
    allocators' settings (Polars' jemalloc, pyarrow's pool) before either library loads."""
    import tracegrade.cli  # noqa: F401
    from pipelines.otel_import import READERS, import_otel

    started = time.perf_counter()
    summary = import_otel([folder], out)
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)  # parsing processes, if any
    # each worker's peak is at most the highest of them, and they may peak together
    worker_peak = READERS * workers.ru_maxrss * 1024
    print(
        json.dumps(
            {
                "seconds": seconds,
                "cpu_seconds": usage.ru_utime
                + usage.ru_stime
                + workers.ru_utime
                + workers.ru_stime,
                "peak_bytes": int(peak_rss_mib() * 2**20) + worker_peak,
                "worker_peak_bytes": worker_peak,
                "spans_read": summary.spans_read,
                "imported": summary.imported,
                "spans": summary.spans,
                "balanced": summary.balanced,
            }
        )
    )


def _json_format_rate(path: Path, limit: int = 40) -> float:
    """Spans per second of json_format.Parse alone on the first `limit` lines of `path`."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    lines = path.read_text(encoding="utf-8").splitlines()[:limit]
    started = time.perf_counter()
    spans = 0
    for line in lines:
        request = json_format.Parse(line, ExportTraceServiceRequest(), ignore_unknown_fields=True)
        spans += sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
    return spans / (time.perf_counter() - started)


def _import_in_child(folder: Path) -> tuple[dict[str, Any], int]:
    """The child's JSON line (with its own CPU seconds, user + system), and its own peak RSS
    in bytes (each child reports its own: the parent's view of its children adds up their
    CPU and keeps the highest peak of any)."""
    with tempfile.TemporaryDirectory() as scratch:
        out = str(Path(scratch) / "traces.parquet")
        command = [sys.executable, __file__, "--child", str(folder), out]
        result = subprocess.run(command, check=True, capture_output=True, text=True)
    run = json.loads(result.stdout.strip().splitlines()[-1])
    return run, int(run.pop("peak_bytes"))


def _checks_against_collector(
    rate: float, peak: int, otlp_rate: float, which: str = ""
) -> list[Check]:
    """The target and the budget, and the rate beside the Collector files' in this run."""
    beside = Check(
        f"Collector JSON files{which} (spans/s)",
        fmt_rate(otlp_rate),
        "",
        f"{rate / otlp_rate:.2f}x",
        "",
        None,
    )
    return [*_checks(rate, peak, otlp_rate)[:2], beside]


def _checks(rate: float, peak: int, baseline: float) -> list[Check]:
    return [
        Check(
            "throughput (spans/s)",
            fmt_rate(rate),
            f"{fmt_rate(TARGET_SPANS_PER_S)} (target)",
            f"{rate / TARGET_SPANS_PER_S:.2f}x",
            "ratio >= 1",
            rate >= TARGET_SPANS_PER_S,
        ),
        Check(
            "peak RSS (MiB)",
            f"{peak / 2**20:,.0f}",
            f"{BUDGET_BYTES / 2**20:,.0f} (budget)",
            f"{peak / BUDGET_BYTES:.2f}x",
            "ratio <= 1",
            peak <= BUDGET_BYTES,
        ),
        Check(
            "json_format.Parse alone (spans/s)",
            fmt_rate(baseline),
            "",
            f"{rate / baseline:.1f}x",
            "",
            None,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000, help="spans (default 1,000,000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument(
        "--langfuse", action="store_true", help="also the same traces as a Langfuse export"
    )
    parser.add_argument(
        "--one-file", action="store_true", help="also each folder's spans as one file"
    )
    parser.add_argument(
        "--langfuse-real",
        type=int,
        nargs="?",
        const=200_000,
        default=None,
        metavar="N",
        help="also the real Langfuse downloads of tests/data repeated to about N observations "
        "(default 200,000: 1.4 GB)",
    )
    add_common_args(parser)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    folder = OUT_DIR / f"otel_spans_{args.n}_{args.seed}"
    facts = generate(folder, args.n, args.seed)
    info, load = begin("OTel import: a folder of Collector JSON files", args)
    print(
        f"input: {facts['spans']:,} spans in {facts['traces']:,} traces, {facts['files']} files, "
        f"{facts['bytes'] / 1e6:,.0f} MB ({facts['bytes'] / facts['spans']:,.0f} bytes a span)"
    )
    run, peak = _import_in_child(folder)
    end(info, load)
    rate = run["spans_read"] / run["seconds"]
    baseline = _json_format_rate(sorted(folder.glob("traces-*.json"))[0])
    print(
        f"{run['spans_read']:,} spans -> {run['imported']:,} traces in {run['seconds']:.2f} s "
        f"(single run); spans read = mapped + dropped: {run['balanced']}"
    )
    print_table(_checks(rate, peak, baseline))
    cores = info["cores_usable"]
    print(
        f"CPU time of the import: {run['cpu_seconds']:.1f} s (user + system), "
        f"{run['spans_read'] / run['cpu_seconds']:,.0f} spans per CPU-second; with all "
        f"{cores} cores to itself the wall time could not drop below {run['cpu_seconds'] / cores:.1f} s "
        f"({cores * run['spans_read'] / run['cpu_seconds']:,.0f} spans/s at most)"
    )
    print(
        f"otel import: {run['spans_read']:,} spans at {rate:,.0f} spans/s, peak RSS "
        f"{peak / 2**20:,.0f} MiB, on {info['cpu']} ({info['cpu_detail']}), {info['cores']} cores"
    )
    result: dict[str, Any] = {
        "spans_per_s": rate,
        "peak_rss_bytes": peak,
        "json_format_spans_per_s": baseline,
    }
    if args.one_file:
        result["one_file"] = _one_file_run(folder, ".json", rate)
    if args.langfuse:
        result["langfuse"] = _langfuse_run(args, rate)
    if args.langfuse_real:
        result["langfuse_real"] = _real_langfuse_run(args.langfuse_real, rate)
    save_result("bench_otel_import", {**info, **facts, **run, **result})


def _langfuse_run(args: argparse.Namespace, otlp_rate: float) -> dict[str, Any]:
    """The same traces as a Langfuse export, imported in a child as the Collector files were,
    printed beside the Collector files' rate and the targets."""
    folder = OUT_DIR / f"langfuse_traces_{args.n}_{args.seed}"
    facts = generate_langfuse(folder, args.n, args.seed)
    print(
        f"\nLangfuse export of the same traces: {facts['spans']:,} observations in "
        f"{facts['traces']:,} traces, {facts['files']} files, {facts['bytes'] / 1e6:,.0f} MB"
    )
    run, peak = _import_in_child(folder)
    rate = run["spans_read"] / run["seconds"]
    print(
        f"{run['spans_read']:,} observations -> {run['imported']:,} traces in "
        f"{run['seconds']:.2f} s (single run); read = mapped + dropped: {run['balanced']}"
    )
    print_table(_checks_against_collector(rate, peak, otlp_rate, ", same traces"))
    found = {**facts, **run, "spans_per_s": rate, "peak_rss_bytes": peak}
    if args.one_file:
        found["one_file"] = _one_file_run(folder, ".jsonl", rate)
    return found


REAL_LANGFUSE = Path(__file__).resolve().parent.parent / "tests" / "data" / "langfuse"


def _real_langfuse_folder(n: int) -> tuple[Path, int]:
    """One file of the real Langfuse downloads, each repeated under new trace ids (every
    observation's `traceId` too) until about `n` observations; written once."""
    folder = OUT_DIR / f"langfuse_real_{n}"
    path = folder / "traces.jsonl"
    if not path.exists():
        traces = [json.loads(p.read_text()) for p in sorted(REAL_LANGFUSE.glob("*.json"))]
        folder.mkdir(exist_ok=True)
        rng, written, number = random.Random(0), 0, 0
        with path.open("w", encoding="utf-8") as out:
            while written < n:
                trace = json.loads(json.dumps(traces[number % len(traces)]))
                trace_id = f"{rng.getrandbits(128):032x}"
                trace.get("trace", trace)["id"] = trace_id
                for observation in trace["observations"]:
                    observation["traceId"] = trace_id
                out.write(json.dumps(trace, separators=(",", ":"), ensure_ascii=False) + "\n")
                written += len(trace["observations"])
                number += 1
    return folder, path.stat().st_size


def _real_langfuse_run(n: int, otlp_rate: float) -> dict[str, Any]:
    """The real Langfuse downloads, repeated, imported in a child as the generated exports."""
    folder, size = _real_langfuse_folder(n)
    run, peak = _import_in_child(folder)
    rate = run["spans_read"] / run["seconds"]
    print(
        f"\nReal Langfuse downloads (tests/data/langfuse) repeated into one file of "
        f"{size / 1e6:,.0f} MB: {run['spans_read']:,} observations "
        f"({size / run['spans_read']:,.0f} bytes each) -> {run['imported']:,} traces in "
        f"{run['seconds']:.2f} s (single run), {size / 1e6 / run['seconds']:,.1f} MB/s, "
        f"CPU time {run['cpu_seconds']:.1f} s"
    )
    print_table(_checks_against_collector(rate, peak, otlp_rate))
    return {**run, "spans_per_s": rate, "peak_rss_bytes": peak, "bytes": size}


def _one_file_run(folder: Path, suffix: str, folder_rate: float) -> dict[str, Any]:
    """The folder's files as one file (written once beside it), imported in a child, printed
    beside the targets and the folder's rate."""
    single = folder.with_name(folder.name + "_one_file")
    path = single / f"traces{suffix}"
    if not path.exists():
        single.mkdir(exist_ok=True)
        with path.open("wb") as out:
            for part in sorted(folder.glob(f"traces-*{suffix}")):
                out.write(part.read_bytes())
    run, peak = _import_in_child(single)
    rate = run["spans_read"] / run["seconds"]
    print(
        f"\nThe same as one file of {path.stat().st_size / 1e6:,.0f} MB: {run['spans_read']:,} "
        f"records -> {run['imported']:,} traces in {run['seconds']:.2f} s (single run), "
        f"CPU time {run['cpu_seconds']:.1f} s"
    )
    checks = _checks(rate, peak, folder_rate)[:2]
    checks.append(
        Check(
            "the folder of files (spans/s)",
            fmt_rate(folder_rate),
            "",
            f"{rate / folder_rate:.2f}x",
            "",
            None,
        )
    )
    print_table(checks)
    return {**run, "spans_per_s": rate, "peak_rss_bytes": peak}


if __name__ == "__main__":
    main()
