"""Chat-message trajectories (OpenAI style) to ReasoningTrace objects, one record at a time.

A pure mapping: records in, trace objects and per-record rejections out, nothing read or
written. It walks the messages of each record in Python rather than with Polars expressions
because the rules are sequential (a tool message answers an earlier call, a retry follows an
earlier error). The rules and their order are docs/import.md.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from transforms._chat_fields import (
    MISSING,
    confidence_of,
    created_at_of,
    field_value,
    is_message,
    key_of,
    kind,
    present,
    shown,
    success_of,
    text_field,
    trace_id_of,
)
from transforms._chat_shapes import (
    final_answer,
    is_error_result,
    with_content_blocks,
    with_response_items,
    with_tool_calls,
)
from transforms._langchain import with_langchain_messages
from transforms.ai_sdk import with_ui_parts
from transforms.config.chat import ChatImportConfig
from transforms.errors import TraceRejected
from transforms.gemini_contents import with_gemini_contents
from transforms.smolagents import with_smolagents_roles
from transforms.trace_schema import nested_record, nested_step

__all__ = [
    "IMPORT_RULES",
    "ChatImport",
    "ChatRecord",
    "ChatRejection",
    "DuplicateTracker",
    "map_trajectories",
    "is_message",
    "map_trajectory",
]

ROLES = ("system", "developer", "user", "assistant", "tool")
"""Message roles the importer knows; any other role rejects the trajectory."""

IMPORT_RULES = (
    "malformed_record",
    "unknown_role",
    "unmatched_tool_message",
    "empty_trajectory",
    "missing_objective",
    "missing_id",
    "invalid_success",
    "invalid_confidence",
    "invalid_created_at",
    "duplicate_id",
)
"""Why a trajectory is rejected. Record-level structure is checked first, then the messages in
order (the first problem found decides among malformed_record, unknown_role and
unmatched_tool_message), then the remaining rules in this order."""


@dataclass(frozen=True)
class ChatRecord:
    """One record of an input file, as the reader found it.

    Attributes:
        number: 1-based line number (JSONL) or array element number (JSON).
        position: 0-based order among the file's records; orders the event times.
        value: The parsed JSON value (None when `malformed` is set).
        malformed: Why the reader could not parse the record, else None.
    """

    number: int
    position: int
    value: Any
    malformed: str | None = None


@dataclass(frozen=True)
class ChatRejection:
    """A trajectory that did not become a trace, with the rule it broke and why."""

    record_number: int
    trace_id: str | None
    key: str | None
    rule: str
    reason: str


@dataclass(frozen=True)
class ChatImport:
    """The traces (ReasoningTrace JSON form, `created_at` a datetime) and the rejections."""

    traces: list[dict[str, Any]]
    record_numbers: list[int]
    rejections: list[ChatRejection]


def _text(content: Any, where: str, data: bool = False) -> str | None:
    """Message text: a string, null, or a list of parts whose `text` parts (or parts with a
    `text` and no `type`) are joined. In a tool's result (`data`) an object with no `type` and
    no text is no content part but data the tool gave back (the Cline SDK's `{query, result}`
    per file read): its JSON; elsewhere such a part (an image's inline data) is left out."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict):
                raise TraceRejected(
                    "malformed_record",
                    f"{where}: a content part is {kind(part)}, expected an object",
                )
            if "type" not in part and not isinstance(part.get("text"), str):
                if data:
                    texts.append(json.dumps(part, ensure_ascii=False))
            elif part.get("type", "text") == "text":
                if not isinstance(part.get("text"), str):
                    raise TraceRejected(
                        "malformed_record", f"{where}: a text part has no string 'text'"
                    )
                texts.append(part["text"])
        return "\n".join(texts)
    raise TraceRejected(
        "malformed_record",
        f"{where}: content is {kind(content)} {shown(content)}; expected a string, null or a list of parts",
    )


def _arguments(arguments: Any, where: str) -> str | None:
    if arguments is None or isinstance(arguments, str):
        return arguments
    if isinstance(arguments, dict):
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    raise TraceRejected(
        "malformed_record",
        f"{where}: function.arguments is {kind(arguments)}; expected a JSON string or an object",
    )


@dataclass
class _Walk:
    """State of one trajectory's walk through its messages."""

    config: ChatImportConfig
    steps: list[dict[str, Any]] = field(default_factory=list)
    pending: dict[str, deque[tuple[int, str]]] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    objective: str | None = None
    result: str = ""
    answer: str | None = None
    """What the last final-answer tool call answered; the trace's answer when set."""
    assistant_messages: int = 0

    def step(
        self, type_: str, content: str | None, tool: str | None = None, args: str | None = None
    ) -> None:
        self.steps.append(
            nested_step(
                {
                    "step_id": len(self.steps),
                    "type": type_,
                    "content": content,
                    "tool_name": tool,
                    "input": args,
                }
            )
        )

    def call(self, name: str, args: str | None, call_id: str | None) -> None:
        if name in self.config.final_answer_tools:
            self.answer = final_answer(args)
        failed_at = self.failures.pop(name, None)
        window = self.config.retry_window
        retry = failed_at is not None and (window is None or self.calls - failed_at - 1 <= window)
        self.step("error_recovery" if retry else "tool_call", None, name, args)
        if call_id is not None:
            self.pending.setdefault(call_id, deque()).append((self.calls, name))
        self.calls += 1

    def assistant(self, message: dict[str, Any], where: str) -> None:
        self.assistant_messages += 1
        text = _text(message.get("content"), where)
        if text is not None and text.strip():
            self.step("thought", text)
            self.result = text
        tool_calls = message.get("tool_calls")
        if tool_calls is None:
            return
        if not isinstance(tool_calls, list):
            raise TraceRejected(
                "malformed_record", f"{where}: tool_calls is {kind(tool_calls)}; expected a list"
            )
        for number, call in enumerate(tool_calls, start=1):
            at = f"{where}, tool call {number}"
            function = call.get("function") if isinstance(call, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            if not isinstance(name, str) or not name:
                raise TraceRejected(
                    "malformed_record",
                    f"{at}: no function.name; each call needs {{'function': {{'name': ...}}}}",
                )
            call_id = call.get("id")
            if call_id is not None and not isinstance(call_id, str):
                raise TraceRejected(
                    "malformed_record", f"{at}: id is {kind(call_id)}; expected a string"
                )
            self.call(name, _arguments(function.get("arguments"), at), call_id)  # type: ignore[union-attr]

    def tool(self, message: dict[str, Any], where: str) -> None:
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str):
            raise TraceRejected(
                "unmatched_tool_message",
                f"{where} (tool) has tool_call_id {shown(call_id)}; it must name the id of an earlier assistant tool call",
            )
        waiting = self.pending.get(call_id)
        if not waiting:
            raise TraceRejected(
                "unmatched_tool_message",
                f"{where} (tool) answers tool_call_id {call_id!r}, but no earlier assistant tool call with that id is waiting for a result (never made, or already answered)",
            )
        ordinal, name = waiting.popleft()
        text = _text(message.get("content"), where, data=True) or ""
        said = is_error_result(text, self.config.error_regex)
        if message.get("is_error") is True and not said:
            # Flagged, its text saying nothing of it ("Exit code 1", "<tool_use_error>..."):
            # kept as the error it is, as the OTel import keeps a failed span's, so that
            # the levels see the failure too (docs/import.md).
            text = json.dumps({"error": text if text.strip() else True}, ensure_ascii=False)
        self.step("observation", text)
        if message.get("is_error") is True or said:
            self.failures[name] = ordinal

    def walk(self, messages: list[Any]) -> None:
        for number, message in enumerate(messages, start=1):
            where = f"message {number}"
            if not isinstance(message, dict):
                raise TraceRejected(
                    "malformed_record",
                    f"{where} is {kind(message)}; expected an object with a role",
                )
            role = message.get("role")
            if not isinstance(role, str):
                raise TraceRejected(
                    "malformed_record", f"{where} has role {shown(role)}; expected a string"
                )
            if role not in ROLES:
                raise TraceRejected(
                    "unknown_role",
                    f"{where} has role {role!r}; the importer knows {', '.join(ROLES)}: map other roles before importing",
                )
            if role == "assistant":
                self.assistant(message, where)
            elif role == "tool":
                self.tool(message, where)
            elif role == "user" and self.objective is None:
                self.objective = _text(message.get("content"), where) or ""


def _as_openai(messages: list[Any]) -> list[Any]:
    """Messages as other tools write them in OpenAI's shape (docs/import.md): Gemini's
    contents, the Vercel AI SDK's UI messages, LangChain's serialised messages, smolagents' roles, Responses API items,
    OpenAI's legacy function calls, Anthropic's and Bedrock's content blocks."""
    written = with_langchain_messages(with_ui_parts(with_gemini_contents(messages)))
    written = with_response_items(with_smolagents_roles(written))
    return with_content_blocks(with_tool_calls(written))


def _trace(record: ChatRecord, config: ChatImportConfig) -> dict[str, Any]:
    value = record.value
    if isinstance(value, list) and value and is_message(value[0]):
        value = {"messages": value}  # the messages alone (`json.dump(messages)`): read below
    if not isinstance(value, dict):
        raise TraceRejected(
            "malformed_record",
            f"the record is {kind(value)}; expected an object holding {config.messages_field}, "
            "or a list of messages",
        )
    messages = field_value(value, config.messages_field)
    if messages is MISSING and isinstance(value.get("messages"), list):
        # OpenAI's chat shape, `{"messages": [...]}` (its fine-tuning files, most chat logs),
        # or the messages alone: where no configured id field is there either, the content
        # names the trajectory (the same messages are the same trace, in either shape)
        messages = value["messages"]
        if not any(present(field_value(value, path)) for path in config.id_fields):
            config = config.model_copy(update={"id_fields": ()})
    if not isinstance(messages, list):
        found = "missing" if messages is MISSING else kind(messages)
        raise TraceRejected(
            "malformed_record",
            f"messages field {config.messages_field!r} is {found}; expected a list of messages "
            "(set messages_field)",
        )
    agent_id = text_field(value, config.agent_id_field, config.agent_id, "agent id")
    domain = text_field(value, config.task_domain_field, config.task_domain, "domain")
    walk = _Walk(config)
    walk.walk(_as_openai(messages))
    if not walk.assistant_messages:
        what = f"{len(messages)} messages but no assistant message" if messages else "no messages"
        raise TraceRejected(
            "empty_trajectory",
            f"the trajectory has {what}; there is nothing the agent did to score",
        )
    objective = walk.objective
    if config.objective_field is not None:
        found = field_value(value, config.objective_field)
        if not isinstance(found, str):
            what = "missing" if found is MISSING else kind(found)
            raise TraceRejected(
                "missing_objective",
                f"objective field {config.objective_field} is {what}; expected a string",
            )
        objective = found
    if objective is None:
        raise TraceRejected(
            "missing_objective",
            "the trajectory has no user message to take the objective from; set objective_field",
        )
    trace_id = trace_id_of(value, agent_id, config)
    success = success_of(value, config.success_rule)
    confidence = confidence_of(value, config)
    answer = walk.result if walk.answer is None else walk.answer
    if config.answer_field is not None:
        given = field_value(value, config.answer_field)
        if isinstance(given, str):
            answer = given
        elif present(given):
            raise TraceRejected(
                "malformed_record",
                f"answer field {config.answer_field} is {kind(given)} {shown(given)}; "
                "expected a string",
            )
    created_at = created_at_of(value, record.position, config)
    return nested_record(
        {
            "trace_id": trace_id,
            "created_at": created_at,
            "agent_id": agent_id,
            "task_domain": domain,
            "success": success,
            "outcome_unknown": success is None,
            "objective": objective,
            "steps": walk.steps,
            "result_summary": answer,
            "confidence": confidence,
        }
    )


def map_trajectory(record: ChatRecord, config: ChatImportConfig) -> dict[str, Any] | ChatRejection:
    """One record's trace (ReasoningTrace JSON form, `created_at` a datetime) or its rejection."""
    if record.malformed is not None:
        return ChatRejection(record.number, None, None, "malformed_record", record.malformed)
    try:
        return _trace(record, config)
    except TraceRejected as rejected:
        key = key_of(record.value, config)
        return ChatRejection(record.number, None, key, rejected.rule, rejected.reason)


def _content_digest(trace: dict[str, Any]) -> str:
    """Hash of a trace's content apart from its event time (which the record's order may set)."""
    content = {**trace, "metadata": {**trace["metadata"], "created_at": None}}
    encoded = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(encoded.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class DuplicateTracker:
    """Which earlier trace each new trace replaces: the last record of a trace id wins.

    The importer writes traces as it maps them and drops the replaced rows at the end, so
    only the ids, row numbers and content hashes stay in memory.
    """

    config: ChatImportConfig
    _seen: dict[str, tuple[int, int, str]] = field(default_factory=dict)

    def add(
        self, trace: dict[str, Any], record: ChatRecord, row: int
    ) -> tuple[int, ChatRejection] | None:
        """Register `trace` (from `record`, written as output row `row`).

        Returns the output row it replaces and that row's `duplicate_id` rejection, or None.
        """
        digest = _content_digest(trace)
        earlier = self._seen.get(trace["id"])
        self._seen[trace["id"]] = (record.number, row, digest)
        if earlier is None:
            return None
        number, earlier_row, earlier_digest = earlier
        key = key_of(record.value, self.config)
        same = "identical" if digest == earlier_digest else "different"
        reason = (
            f"record {record.number} has the same trace id (key {key}) and is kept instead; "
            f"the two traces' content (apart from the event time) is {same}"
        )
        return earlier_row, ChatRejection(number, trace["id"], key, "duplicate_id", reason)


def map_trajectories(records: Iterable[ChatRecord], config: ChatImportConfig) -> ChatImport:
    """Map every record to a trace, or to a rejection naming the rule and the reason.

    Duplicate trace ids: the last record in file order is kept, the earlier ones are
    rejected as `duplicate_id` (the scorer keeps the last occurrence too).
    """
    traces: list[dict[str, Any]] = []
    numbers: list[int] = []
    rejections: list[ChatRejection] = []
    replaced: set[int] = set()
    tracker = DuplicateTracker(config)
    for record in records:
        result = map_trajectory(record, config)
        if isinstance(result, ChatRejection):
            rejections.append(result)
            continue
        duplicate = tracker.add(result, record, len(traces))
        if duplicate is not None:
            replaced.add(duplicate[0])
            rejections.append(duplicate[1])
        traces.append(result)
        numbers.append(record.number)
    kept = [row for row in range(len(traces)) if row not in replaced]
    rejections.sort(key=lambda rejection: rejection.record_number)
    return ChatImport(
        traces=[traces[row] for row in kept],
        record_numbers=[numbers[row] for row in kept],
        rejections=rejections,
    )
