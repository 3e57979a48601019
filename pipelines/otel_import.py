"""The `import_otel` flow: OpenTelemetry span files in, nested trace Parquet and a report out.

read each file in chunks -> facts of each span -> park by trace id (spool) -> map each bucket's
traces -> append to Parquet -> write the report. Scoring reads span files through the format
registry (`storage.inputs.formats`), not through this flow.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.runs import Steps, publish_markdown
from storage.config_files import load_otel_config
from storage.spans.block_reading import read_chunks
from storage.spans.otel_files import SpanChunk, otel_input_files
from storage.spans.otel_output import otel_report_path, otel_trace_writer, write_otel_report
from storage.spans.otel_spool import SpanSpool, bucket_count
from transforms.config.otel import OtelImportConfig
from transforms.otel import DROP_RULES, TRACE_RULES, OtelMapping, map_spans
from transforms.otel_spans import span_facts

__all__ = ["import_otel"]


@dataclass(frozen=True)
class OtelImportSummary:
    """What one OTel import did: spans in and out, traces, rejections, where the files went."""

    files: int
    out: str
    report: str
    records: int
    records_rejected: int
    spans_read: int
    spans: dict[str, int] = field(default_factory=dict)
    imported: int = 0
    succeeded: int = 0
    unknown: int = 0
    """Traces imported whose root span records no outcome (success null)."""
    rejected: dict[str, int] = field(default_factory=dict)

    @property
    def spans_dropped(self) -> int:
        """Spans that did not become a step, all rules together."""
        return sum(count for rule, count in self.spans.items() if rule != "mapped")

    @property
    def balanced(self) -> bool:
        """Spans read = spans mapped + spans dropped: nothing was lost without a rule."""
        return self.spans_read == self.spans.get("mapped", 0) + self.spans_dropped

    @property
    def markdown(self) -> str:
        """The summary as a Markdown table; drops and rejections by rule in rule order."""
        lines = [
            "# OTel import",
            "",
            "| count | value |",
            "|---|---|",
            f"| files read | {self.files:,} |",
            f"| records read (lines, messages, table rows) | {self.records:,} |",
            f"| records rejected (malformed_record) | {self.records_rejected:,} |",
            f"| spans read | {self.spans_read:,} |",
            f"| spans mapped to steps | {self.spans.get('mapped', 0):,} |",
            f"| spans dropped | {self.spans_dropped:,} |",
        ]
        lines += [
            f"| spans dropped: {rule} | {n:,} |"
            for rule, n in self.spans.items()
            if rule != "mapped" and n
        ]
        lines += [
            f"| traces imported | {self.imported:,} |",
            f"| imported, success | {self.succeeded:,} |",
            f"| imported, failure | {self.imported - self.succeeded - self.unknown:,} |",
            f"| imported, outcome unknown (success null) | {self.unknown:,} |",
            f"| traces rejected | {sum(self.rejected.values()):,} |",
        ]
        lines += [f"| traces rejected: {rule} | {n:,} |" for rule, n in self.rejected.items()]
        check = "=" if self.balanced else "!="
        lines += [
            "",
            f"Spans read {check} spans mapped + spans dropped "
            f"({self.spans_read:,} {check} {self.spans.get('mapped', 0):,} + {self.spans_dropped:,}).",
            f"Traces: {self.out}",
            f"Rejections (one row each, with the reason): {self.report}",
        ]
        return "\n".join(lines) + "\n"


READERS = 2
"""Blocks parsed at once (`storage.spans.otel_files.read_chunks`): of one file or of several.
Arrow's JSON reader and Polars release the GIL, so two threads keep both cores of a small
machine busy; each parses one block (about 8 MB of input) at a time on its own thread (Arrow's
own threads on top of these two spend their time scheduling; docs/performance.md)."""


def _read_files(
    files: list[Path], settings: OtelImportConfig, spool: SpanSpool, malformed: list[dict[str, Any]]
) -> int:
    """Read every file into the spool (each chunk's rows tagged with its place in the files'
    order, so the spool hands them back in file order); returns how many records were read."""
    lock = threading.Lock()
    records = 0
    rejections: dict[int, list[dict[str, Any]]] = {}

    def handle(order: int, chunk: SpanChunk) -> None:
        nonlocal records
        spool.add(span_facts(chunk.spans, settings), order=order)
        with lock:
            records += chunk.records
            rejections[order] = chunk.rejections

    read_chunks(files, settings, handle, workers=READERS)
    for order in sorted(rejections):
        malformed.extend(rejections[order])
    return records


MAPPERS = 2
"""Buckets mapped at once, handed to the writer in bucket order. Mapping is Polars work that
releases the GIL; alone it kept 1.25 of 2 cores busy."""


def _mapped(buckets: Iterable[pl.DataFrame], settings: OtelImportConfig) -> Iterator[OtelMapping]:
    """`map_spans` of each bucket, in order, `MAPPERS` buckets at a time."""
    with ThreadPoolExecutor(max_workers=MAPPERS, thread_name_prefix="otel-map") as pool:
        pending: deque[Future[OtelMapping]] = deque()
        for bucket in buckets:
            pending.append(pool.submit(map_spans, bucket, settings))
            del bucket
            if len(pending) == MAPPERS:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _import(
    paths: list[str],
    out: str,
    report: str | None,
    config: str | None,
    options: dict[str, Any] | None,
) -> OtelImportSummary:
    settings = load_otel_config(config, options)
    files = otel_input_files(paths)
    report_path = Path(report) if report is not None else otel_report_path(out)
    size = sum(path.stat().st_size for path in files)
    rejections: list[pl.DataFrame] = []
    malformed: list[dict[str, Any]] = []
    spans: Counter[str] = Counter()
    with (
        SpanSpool(bucket_count(size), Path(out).expanduser().resolve().parent) as spool,
        otel_trace_writer(out) as writer,
    ):
        records = _read_files(files, settings, spool, malformed)
        for mapping in _mapped(spool.buckets(), settings):
            writer.add(mapping.traces)
            rejections.append(mapping.rejections)
            spans.update(mapping.spans)
        imported, succeeded, spans_read = writer.rows, writer.succeeded, spool.rows
        unknown = writer.unknown
    if malformed:
        rejections.append(pl.DataFrame(malformed))
    write_otel_report(rejections, report_path)
    rules = Counter(rule for frame in rejections if not frame.is_empty() for rule in frame["rule"])
    return OtelImportSummary(
        files=len(files),
        out=str(out),
        report=str(report_path),
        records=records,
        records_rejected=len(malformed),
        spans_read=spans_read,
        spans={rule: spans[rule] for rule in ("mapped", *DROP_RULES)},
        imported=imported,
        succeeded=succeeded,
        unknown=unknown,
        rejected={rule: rules[rule] for rule in TRACE_RULES if rules[rule]},
    )


def import_otel(
    paths: list[str],
    out: str,
    report: str | None = None,
    config: str | None = None,
    options: dict[str, Any] | None = None,
) -> OtelImportSummary:
    """Import OpenTelemetry span files (OTLP JSON lines, OTLP protobuf, Phoenix span tables)
    into trace Parquet and a report.

    Args:
        paths: files, folders (searched recursively) or glob patterns.
        out: the Parquet file to write (replaced atomically).
        report: the CSV of rejected traces and records; default beside `out`.
        config: a TOML file of `OtelImportConfig` keys.
        options: keys of `OtelImportConfig` that override the file's.
    """
    summary = Steps().step("import", _import, list(paths), out, report, config, options)
    publish_markdown(summary.markdown, "import-otel-summary", "tracegrade OTel import")
    return summary
