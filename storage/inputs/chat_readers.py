"""Chat trajectory files read as trace files: each record mapped by `transforms.chat` (the same
mapping as `tracegrade import chat`), so a scoring run reads them without a converted copy."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from storage.errors import InputError
from storage.inputs.canonical import CANONICAL_SCHEMA
from storage.inputs.chat_files import CHAT_EXTENSIONS, iter_chat_records
from storage.inputs.readers import FileInfo, file_facts, rows_from_objects
from transforms.chat import ChatRecord, ChatRejection, map_trajectories
from transforms.config.chat import ChatImportConfig

__all__ = ["ChatFileFormat"]


def _iso(trace: dict[str, Any]) -> str:
    created_at = trace["metadata"]["created_at"]
    return created_at.isoformat() if isinstance(created_at, datetime) else str(created_at)


def _rejected_rows(rejections: list[ChatRejection], source: str) -> pl.DataFrame:
    """Rejections as canonical rows that carry their rule as `read_rule` (the other columns
    null)."""
    rows = [
        {
            "source_file": source,
            "row_number": rejection.record_number,
            "trace_id": rejection.trace_id,
            "read_rule": rejection.rule,
            "read_reason": f"{rejection.reason} (record {rejection.record_number})",
        }
        for rejection in rejections
    ]
    return pl.DataFrame(rows, schema=CANONICAL_SCHEMA)


@dataclass(frozen=True)
class ChatFileFormat:
    """Chat trajectory files (a JSON array of records, or one a line) as a
    `storage.inputs.readers.FileFormat`. Rows are numbered by record: a trace keeps its record's
    number, and so does a rejection (with its rule as `read_rule`)."""

    config: ChatImportConfig
    extensions: tuple[str, ...] = CHAT_EXTENSIONS
    what: str = "chat trajectory files"
    convert: Callable[[Any], Any] | None = None
    """Turns each record as the file holds it into a chat record (another tool's layout)."""
    records: Callable[[Path], Iterator[ChatRecord]] = iter_chat_records
    """Reads a file's records (a JSON array or lines; another tool's container)."""

    def read_batches(
        self, path: Path, consume: Callable[[pl.DataFrame], None], batch_rows: int
    ) -> FileInfo:
        facts = file_facts(path)
        if facts.rule is not None:
            return facts
        name = facts.path
        try:
            records = self.records(path)
            if self.convert is not None:
                convert = self.convert
                records = (replace(record, value=convert(record.value)) for record in records)
            mapped = map_trajectories(records, self.config)
        except InputError as exc:
            return replace(facts, rule="unreadable_file", reason=str(exc))
        traces = [
            {**trace, "metadata": {**trace["metadata"], "created_at": _iso(trace)}}
            for trace in mapped.traces
        ]
        good = rows_from_objects(traces, name).with_columns(
            row_number=pl.Series(mapped.record_numbers, dtype=pl.Int64)
        )
        rows = pl.concat([good, _rejected_rows(mapped.rejections, name)], how="vertical")
        rows = rows.sort("row_number")
        for batch in rows.iter_slices(batch_rows):
            consume(batch)
        return replace(facts, rows_read=rows.height)
