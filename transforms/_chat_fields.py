"""Record-level fields of a chat trajectory: success, confidence, event time, agent, trace id.

Each function reads one configured field of a record and raises `TraceRejected` with the rule and a
reason when the value cannot be used. Pure: nothing here reads or writes files.
"""

from __future__ import annotations

import json
import math
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from transforms._langchain import is_langchain_message
from transforms.ai_sdk import is_ui_message
from transforms.config.chat import ChatImportConfig, SuccessRule
from transforms.errors import TraceRejected
from transforms.gemini_contents import is_gemini_content

__all__ = [
    "MISSING",
    "confidence_of",
    "created_at_of",
    "field_value",
    "is_message",
    "key_of",
    "kind",
    "present",
    "shown",
    "success_of",
    "text_field",
    "trace_id_of",
]

_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "tracegrade:import:chat")
_SHOWN = 60

MISSING: Any = object()
"""What `field_value` returns for a path the record does not have."""


def is_message(value: Any) -> bool:
    """An OpenAI-style message rather than a trajectory: an object with a text `role` and its
    `content` or `tool_calls`, a UI message of the Vercel AI SDK (its typed `parts`), a
    LangChain message serialised, or a Gemini content (a file that is one message list, or
    one list a line, starts with one)."""
    return (
        (
            isinstance(value, dict)
            and isinstance(value.get("role"), str)
            and ("content" in value or "tool_calls" in value)
        )
        or is_ui_message(value)
        or is_langchain_message(value)
        or is_gemini_content(value)
    )


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def shown(value: Any) -> str:
    """`repr(value)`, cut short so one huge value cannot flood a reason."""
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def kind(value: Any) -> str:
    """The JSON-ish type name of a value for a reason ("null" for None)."""
    return "null" if value is None else type(value).__name__


def field_value(record: Any, path: str) -> Any:
    """The value at a dotted path (object keys; digits also index lists), or a private sentinel."""
    current = record
    for part in path.split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return MISSING
    return current


def present(value: Any) -> bool:
    """True when a field exists and is not null."""
    return value is not MISSING and value is not None


def success_of(record: dict[str, Any], rule: SuccessRule) -> bool | None:
    """The success expression evaluated on the record; None where the record has no value in
    the success field (the producer recorded no outcome: SPEC 1)."""
    value = field_value(record, rule.path)
    if not present(value):
        return None
    if rule.op is None:
        if not isinstance(value, bool):
            raise TraceRejected(
                "invalid_success",
                f"{rule.path} is {kind(value)} {shown(value)}; a success field alone must be true or false",
            )
        return value
    expected = rule.value
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (value, expected))
    if not numbers and type(value) is not type(expected):
        raise TraceRejected(
            "invalid_success",
            f"{rule.path} is {kind(value)} {shown(value)}, but the success expression {rule} compares it with {kind(expected)}",
        )
    if numbers and not math.isfinite(value):
        raise TraceRejected(
            "invalid_success", f"{rule.path} is {value}; a success value must be a finite number"
        )
    if rule.op == "==":
        return bool(value == expected)
    if rule.op == "!=":
        return bool(value != expected)
    return bool(
        {
            ">=": value >= expected,
            "<=": value <= expected,
            ">": value > expected,
            "<": value < expected,
        }[rule.op]
    )


def confidence_of(record: dict[str, Any], config: ChatImportConfig) -> float:
    """outcome.confidence: the configured field, else the configured default."""
    if config.confidence_field is None:
        return config.default_confidence
    value = field_value(record, config.confidence_field)
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or not 0.0 <= value <= 1.0:
        what = "missing" if value is MISSING else f"{kind(value)} {shown(value)}"
        raise TraceRejected(
            "invalid_confidence",
            f"{config.confidence_field} is {what}; confidence must be a number in [0, 1]",
        )
    return float(value)


def created_at_of(record: dict[str, Any], position: int, config: ChatImportConfig) -> datetime:
    """The event time: the configured field (UTC), else base time plus `position` steps."""
    if config.created_at_field is None:
        try:
            return config.base_time + timedelta(seconds=position * config.time_step_seconds)
        except OverflowError:
            raise TraceRejected(
                "invalid_created_at",
                f"base_time {config.base_time.isoformat()} plus {position} steps of "
                f"{config.time_step_seconds} s is past year 9999; use an earlier base_time or a "
                "smaller time step",
            ) from None
    value = field_value(record, config.created_at_field)
    parsed = None
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            parsed = parsed.astimezone(UTC)
        except (ValueError, OverflowError):
            parsed = None
    if parsed is None:
        what = "missing" if value is MISSING else f"{kind(value)} {shown(value)}"
        raise TraceRejected(
            "invalid_created_at",
            f"{config.created_at_field} is {what}; it must be ISO-8601 text such as "
            "2024-05-01T12:00:00Z (in years 1 to 9999 once converted to UTC)",
        )
    return parsed


def text_field(
    record: dict[str, Any], path: str | None, default: str | None, what: str
) -> str | None:
    """The string at `path`, or `default` when the record has no value there."""
    if path is None:
        return default
    value = field_value(record, path)
    if not present(value):
        return default
    if not isinstance(value, str) or not value:
        raise TraceRejected(
            "malformed_record",
            f"{what} field {path} is {kind(value)} {shown(value)}; expected a non-empty string",
        )
    return value


def trace_id_of(record: dict[str, Any], agent_id: str | None, config: ChatImportConfig) -> str:
    """`kp:trace:` + a UUID-5 of the agent id and the id fields' values (or the whole record)."""
    if config.id_fields:
        values = [field_value(record, path) for path in config.id_fields]
        missing = [
            path for path, value in zip(config.id_fields, values, strict=True) if not present(value)
        ]
        if missing:
            raise TraceRejected(
                "missing_id",
                f"id field(s) {', '.join(missing)} missing or null; every record needs "
                f"{', '.join(config.id_fields)} (set id_fields to the fields that identify a "
                "trajectory)",
            )
        key = _json(values)
    else:
        key = _json(record)
    name = json.dumps({"agent_id": agent_id, "key": key}, sort_keys=True, separators=(",", ":"))
    return f"kp:trace:{uuid.uuid5(_NAMESPACE, name)}"


def key_of(record: Any, config: ChatImportConfig) -> str | None:
    """The id fields' values as JSON, for the report; None when any is missing."""
    if not isinstance(record, dict) or not config.id_fields:
        return None
    values = [field_value(record, path) for path in config.id_fields]
    if not all(present(value) for value in values):
        return None
    return _json(values)
