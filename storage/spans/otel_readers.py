"""Span files as a scoring run's input: each file mapped to canonical trace rows on its own.

`tracegrade score --format otel` hands `OtelFileFormat` to the run's reader
(`storage.inputs.readers.read_file_batches`), so a nightly run can point at the Collector's output
folder. The file ledger is per file, so a file is mapped alone: a trace whose spans the
Collector wrote into two files becomes two partial traces of the same id, and the later file's
replaces the earlier (docs/import.md says when to import first instead).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl

from storage.errors import InputError, UnrecognisedFile
from storage.inputs.readers import FileInfo, file_facts
from storage.spans.block_reading import read_chunks
from storage.spans.otel_files import OTEL_EXTENSIONS, SpanChunk
from storage.spans.otel_output import canonical_rows
from storage.spans.otel_spool import SpanSpool, bucket_count
from transforms.config.otel import OtelImportConfig
from transforms.otel import REJECTION_SCHEMA, map_spans
from transforms.otel_spans import span_facts

__all__ = ["OtelFileFormat"]

READ_WORKERS = 2
"""Blocks of a span file parsed at once (`storage.spans.otel_files.read_chunks`)."""


@dataclass(frozen=True)
class OtelFileFormat:
    """OpenTelemetry span files read as trace files (a `storage.inputs.readers.FileFormat`).

    Rows: one per mapped trace, then one per rejected trace, invalid span or malformed record
    (with its rule as `read_rule`, so the run quarantines it), numbered from 1 in that order.
    """

    config: OtelImportConfig
    extensions: tuple[str, ...] = OTEL_EXTENSIONS
    what: str = "span files"

    def read_batches(
        self, path: Path, consume: Callable[[pl.DataFrame], None], batch_rows: int
    ) -> FileInfo:
        """Map the spans of `path` and hand the canonical rows to `consume`, `batch_rows` at a
        time; never raises for a bad file (the FileInfo carries its rule)."""
        facts = file_facts(path)
        if facts.rule is not None:
            return facts
        try:
            rows = self._mapped(path, facts.path, facts.size, consume, batch_rows)
        except UnrecognisedFile as exc:
            return replace(facts, rule="unrecognised_file", reason=str(exc))
        except InputError as exc:
            return replace(facts, rule="unreadable_file", reason=str(exc))
        return replace(facts, rows_read=rows)

    def _mapped(
        self,
        path: Path,
        name: str,
        size: int,
        consume: Callable[[pl.DataFrame], None],
        batch_rows: int,
    ) -> int:
        rows = 0

        def hand_over(frame: pl.DataFrame) -> None:
            nonlocal rows
            for batch in frame.iter_slices(batch_rows):
                consume(batch)
            rows += frame.height

        rejections: dict[int, list[dict[str, Any]]] = {}
        with SpanSpool(bucket_count(size)) as spool:

            def park(order: int, chunk: SpanChunk) -> None:
                spool.add(span_facts(chunk.spans, self.config), order=order)
                rejections[order] = chunk.rejections  # one key a chunk: no two threads' alike

            read_chunks([path], self.config, park, workers=READ_WORKERS)
            for bucket in spool.buckets():
                mapping = map_spans(bucket, self.config)
                hand_over(canonical_rows(mapping.traces, mapping.rejections, name, rows + 1))
        malformed = [row for order in sorted(rejections) for row in rejections[order]]
        if malformed:
            rejected = pl.DataFrame(malformed, schema=REJECTION_SCHEMA)
            hand_over(canonical_rows(None, rejected, name, rows + 1))
        return rows
