"""What a file holds, in words, from its first bytes: for the messages of a file that yields
no trace ("a JSON array of 8 objects with keys name, context, kind, ..."), so a person can see
at once that the file is of another kind than the one it was read as.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from storage.inputs.packed import codec_of

__all__ = ["describe_file", "describe_json", "unread_shape"]

_HEAD_BYTES = 1 << 16
"""How much of a file is looked at."""
_WHOLE_BYTES = 8 << 20
"""A JSON document up to this size is parsed whole, to count its elements."""
_KEYS = 6


def _keys(value: dict[str, Any]) -> str:
    names = list(value)
    shown = ", ".join(names[:_KEYS])
    return shown + (f", ... ({len(names)} keys)" if len(names) > _KEYS else "")


def describe_json(value: Any) -> str:
    """What a parsed JSON document is, in a few words."""
    if isinstance(value, list):
        objects = [item for item in value if isinstance(item, dict)]
        if not value:
            return "an empty JSON array"
        if len(objects) == len(value):
            return f"a JSON array of {len(value):,} objects with keys {_keys(objects[0])}"
        kinds = sorted({type(item).__name__ for item in value})
        return f"a JSON array of {len(value):,} values ({', '.join(kinds)})"
    if isinstance(value, dict):
        return f"a JSON object with keys {_keys(value)}"
    return f"a JSON {type(value).__name__}"


def _parquet(path: Path) -> str:
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
    except Exception as exc:  # a damaged file: say that instead of its columns
        return f"a Parquet file that cannot be opened ({type(exc).__name__})"
    names = [meta.schema.column(i).path.split(".")[0] for i in range(meta.num_columns)]
    columns = list(dict.fromkeys(names))
    shown = ", ".join(columns[:_KEYS]) + (", ..." if len(columns) > _KEYS else "")
    return f"a Parquet file of {meta.num_rows:,} rows with columns {shown}"


def describe_file(path: Path) -> str:
    """What `path` holds, in a few words; never raises. A gzip or Zstandard file is described
    by what it holds."""
    try:
        codec = codec_of(path)
        if codec is not None:
            return f"{_packed(path, codec)} ({codec}-compressed)"
        with path.open("rb") as handle:
            head = handle.read(_HEAD_BYTES)
        size = path.stat().st_size
    except OSError as exc:
        return f"a file that cannot be read ({exc.strerror or type(exc).__name__})"
    if head.startswith(b"PAR1"):
        return _parquet(path)
    whole = path.read_bytes if size <= _WHOLE_BYTES else None
    return _described(head, size, whole)


def _packed(path: Path, codec: str) -> str:
    """What a compressed file holds: its first `_WHOLE_BYTES` unpacked, described."""
    import pyarrow as pa

    try:
        with pa.input_stream(str(path), compression=codec) as source:
            data = source.read(_WHOLE_BYTES + 1)
    except (OSError, pa.ArrowException) as exc:
        return f"data that cannot be unpacked ({exc})"
    whole = (lambda: data) if len(data) <= _WHOLE_BYTES else None
    return _described(data[:_HEAD_BYTES], len(data), whole)


def _described(head: bytes, size: int, whole: Callable[[], bytes] | None) -> str:
    """What a file of `size` bytes holds from its first bytes, `whole` giving all of them
    where the file is small enough to parse whole."""
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff").lstrip()
    if not text:
        return "only blank lines" if size else "no bytes"
    if text[0] in "[{" and whole is not None:
        try:
            return describe_json(json.loads(whole().decode("utf-8-sig")))
        except (ValueError, UnicodeDecodeError):
            pass  # not one JSON document: JSON lines, or not JSON
    first = text.splitlines()[0]
    if first.startswith("{"):
        try:
            record = json.loads(first)
        except ValueError:
            record = None
        if isinstance(record, dict):
            return f"JSON lines whose first record has keys {_keys(record)}"
    shown = first if len(first) <= 60 else first[:57] + "..."
    return f"text whose first line is {shown!r}"


def _first_value(value: dict[str, Any]) -> Any:
    return next(iter(value.values()), None)


def _langfuse_table(record: dict[str, Any]) -> str | None:
    """ "traces" or "scores" for a row of those tables of Langfuse's blob storage export (its
    ClickHouse names) or of its score API (camelCase), else None."""
    if "bookmarked" in record and "timestamp" in record and "observations" not in record:
        named = record.keys() & {"session_id", "sessionId", "user_id", "userId"}
        return "traces" if named and "trace_id" not in record and "type" not in record else None
    trace = record.get("trace_id", record.get("traceId"))
    kind = record.get("data_type", record.get("dataType"))
    if isinstance(trace, str) and "value" in record and "name" in record and kind is not None:
        return "scores" if kind in ("NUMERIC", "BOOLEAN", "CATEGORICAL", "CORRECTION") else None
    return None


def unread_shape(record: Any) -> str | None:
    """What a file whose first record is `record` is, where it is a known kind that holds no
    agent's run, and what to give instead; None for any other record."""
    if not isinstance(record, dict):
        return None
    if record.get("type") == "system" and record.get("subtype") == "init" and "tools" in record:
        return (
            "an agent CLI's headless stream (Claude Code's `claude -p --output-format "
            "stream-json`, or one modelled on it), which does not hold the prompt; give the "
            "session's own transcript instead (Claude Code's: "
            "~/.claude/projects/<project>/<session_id>.jsonl)"
        )
    if record.get("type") == "thread.started" and "thread_id" in record:
        return (
            "Codex's `codex exec --json` output, which does not hold the prompt; give the "
            "session's rollout instead (~/.codex/sessions/YYYY/MM/DD/rollout-*-<thread_id>.jsonl)"
        )
    if record.get("object") == "response" and isinstance(record.get("output"), list):
        return (
            "an OpenAI Responses API response: the model's reply, not the conversation; give "
            "the run's items instead (the OpenAI Agents SDK's `result.to_input_list()`)"
        )
    if "resolved_ids" in record or ("resolved" in record and "unresolved_ids" in record):
        return (
            "a SWE-bench evaluation report: verdicts, not runs; its resolved ids label the "
            "run's trajectories (`confidence --evaluate` with SQL, docs/confidence.md)"
        )
    first = _first_value(record)
    if (isinstance(first, dict) and "model_patch" in first) or "model_patch" in record:
        return "SWE-bench predictions: the patches a run submitted, not the runs"
    if record.keys() == {"resourceLogs"}:
        return (
            "OpenTelemetry log records (OTLP `resourceLogs`) without spans: where an "
            "instrumentation keeps the GenAI content in log records, tracegrade reads them with "
            "the spans they name, in the same file (the Collector's traces and logs pipelines "
            "written by one file exporter), or in a file beside it by `tracegrade import otel` "
            'over the folder (docs/import.md, "Content in span events")'
        )
    table = _langfuse_table(record)
    if table == "traces":
        return (
            "Langfuse traces without their observations (the traces table of Langfuse's blob "
            "storage export or of its UI's export: each a trace's name, tags, input and output, "
            "no step): the runs are in the observations, the blob export's observations table "
            "beside it (`observations/` or `observations_v2/`), or each trace with its "
            "observations (its download, `GET /api/public/traces/{id}`)"
        )
    if table == "scores":
        return (
            "Langfuse scores (the blob storage export's scores table, or the score API's): "
            'verdicts on traces, not runs; as labels: docs/confidence.md, "Labels from '
            'Langfuse scores"'
        )
    if isinstance(record.get("ts"), int | float) and record.get("type") in ("say", "ask"):
        return (
            "a Cline task's UI messages (`ui_messages.json`); give the "
            "`api_conversation_history.json` beside it"
        )
    return None
