"""Chat trajectory files in, nested trace Parquet and the import report out.

Reading never stops at a bad record: a JSONL line that does not parse becomes a record with
its reason, for the mapping to report. Both outputs are written to a temporary file beside
the target and renamed into place, so a crash never leaves a half-written file behind.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from tracegrade.errors import InputError
from transforms.chat import ChatRecord, ChatRejection

__all__ = [
    "CHAT_EXTENSIONS",
    "REPORT_SCHEMA",
    "TRACE_ARROW_SCHEMA",
    "read_chat_records",
    "report_path_for",
    "write_import_report",
    "write_trace_parquet",
]

CHAT_EXTENSIONS = (".json", ".jsonl", ".ndjson")
"""Extensions `read_chat_records` reads: a JSON array (or one object), or one record a line."""

_STEP = pa.struct(
    [
        ("step_id", pa.int64()),
        ("type", pa.string()),
        ("content", pa.string()),
        ("tool", pa.struct([("name", pa.string())])),
        ("input", pa.string()),
        ("output_summary", pa.string()),
        ("latency_ms", pa.float64()),
    ]
)

TRACE_ARROW_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        (
            "metadata",
            pa.struct(
                [
                    ("created_at", pa.timestamp("us", tz="UTC")),
                    ("agent_id", pa.string()),
                    ("task_domain", pa.string()),
                    ("success", pa.bool_()),
                ]
            ),
        ),
        ("task", pa.struct([("objective", pa.string())])),
        ("steps", pa.list_(_STEP)),
        ("outcome", pa.struct([("result_summary", pa.string()), ("confidence", pa.float64())])),
    ]
)
"""The nested layout written: what `tracegrade score` reads (docs/input-format.md)."""

REPORT_SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "record_number": pl.Int64(),
    "key": pl.String(),
    "trace_id": pl.String(),
    "rule": pl.String(),
    "reason": pl.String(),
}
"""Columns of the import report: one row per rejected trajectory."""


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _unstorable(value: Any) -> bool:
    """True when parsed text holds a lone UTF-16 surrogate, which UTF-8 (and Parquet) cannot store."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _surrogate_reason(where: str) -> str:
    return (
        f"{where} holds a lone UTF-16 surrogate escape (\\ud800 to \\udfff), which is not "
        "valid Unicode text; fix the exporter to write whole characters"
    )


def report_path_for(out: str | Path) -> Path:
    """The default report beside `out`: `traces.parquet` -> `traces.import-report.csv`.

    CSV, so a folder holding both can still be given to `tracegrade score`.
    """
    path = Path(out)
    return path.with_name(f"{path.stem}.import-report.csv")


def _decode(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise InputError(f"cannot read {path} ({exc}); check the path and its permissions") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not UTF-8 text ({exc}); re-export it as UTF-8") from None


def _lines(path: Path, text: str) -> list[ChatRecord]:
    records: list[ChatRecord] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            reason = f"line {number} is not valid JSON ({exc.msg} at column {exc.colno})"
            records.append(ChatRecord(number, len(records), None, reason))
            continue
        if _SURROGATE_ESCAPE.search(line) and _unstorable(value):
            reason = _surrogate_reason(f"line {number}")
            records.append(ChatRecord(number, len(records), None, reason))
        else:
            records.append(ChatRecord(number, len(records), value))
    return records


def read_chat_records(path: str | Path) -> list[ChatRecord]:
    """Every record of a chat trajectory file, in file order.

    Raises:
        InputError: the file is missing, unreadable, not UTF-8, has another extension, or is
            a `.json` file whose text is not JSON or neither an array nor an object.
    """
    source = Path(path).expanduser()
    suffix = source.suffix.lower()
    if suffix not in CHAT_EXTENSIONS:
        raise InputError(
            f"{source} has extension {source.suffix!r}; chat import reads "
            f"{', '.join(CHAT_EXTENSIONS)} (a JSON array of trajectories or one a line)"
        )
    if not source.is_file():
        raise InputError(f"{source} does not exist or is not a file; give the trajectory file")
    text = _decode(source)
    if suffix != ".json":
        return _lines(source, text)
    try:
        document: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{source} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            "fix the file, or name it .jsonl if it holds one trajectory a line"
        ) from None
    if isinstance(document, dict):
        document = [document]
    if not isinstance(document, list):
        raise InputError(
            f"{source} holds a JSON {type(document).__name__}; expected an array of trajectories"
        )
    check = _SURROGATE_ESCAPE.search(text) is not None
    return [
        ChatRecord(index + 1, index, None, _surrogate_reason(f"element {index + 1}"))
        if check and _unstorable(value)
        else ChatRecord(index + 1, index, value)
        for index, value in enumerate(document)
    ]


@contextmanager
def _replacing(target: Path) -> Iterator[Path]:
    """A temporary path beside `target`, renamed onto it when the block succeeds."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        yield temporary
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def write_trace_parquet(traces: Sequence[dict[str, Any]], out: str | Path) -> Path:
    """Write trace objects (ReasoningTrace JSON form) as nested Parquet, atomically."""
    target = Path(out)
    table = pa.Table.from_pylist(list(traces), schema=TRACE_ARROW_SCHEMA)
    with _replacing(target) as temporary:
        pq.write_table(table, temporary)
    return target


def write_import_report(
    rejections: Sequence[ChatRejection], source_file: str, out: str | Path
) -> Path:
    """Write one CSV row per rejected trajectory (`REPORT_SCHEMA`), atomically; header only when none."""
    target = Path(out)
    frame = pl.DataFrame(
        {
            "source_file": [source_file] * len(rejections),
            "record_number": [item.record_number for item in rejections],
            "key": [item.key for item in rejections],
            "trace_id": [item.trace_id for item in rejections],
            "rule": [item.rule for item in rejections],
            "reason": [item.reason for item in rejections],
        },
        schema=REPORT_SCHEMA,
    )
    with _replacing(target) as temporary:
        frame.write_csv(temporary)
    return target
