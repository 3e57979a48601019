"""Google Agent Development Kit (ADK) sessions as chat trajectories, mapped by the chat mapping
with `ADK_KEYS` (docs/formats.md).

A session is what ADK's session service keeps of one conversation with an app, written as
JSON by the `Session` model (`session.model_dump_json()`: snake_case, as google/adk-samples
keeps its example sessions; with its aliases, as `adk web`'s API returns it: camelCase): `id`,
`app_name`, `user_id`, `state`, `last_update_time` and `events`. Each event has an `author`
(`user`, or the agent that wrote it), a `timestamp` (seconds) and, where it says something, a
`content` with Gemini `parts`: `text` (a `thought` part is the model's own reasoning),
`function_call` (`id`, `name`, `args`) and `function_response` (`id`, `name`, `response`: a
tool's returned object, or `{"result": value}` where it returned something else). Events
without content only change the session's state.

The session is one trace: the user's text the user's (the first the objective), an agent's
text a thought (the last the answer), each function call a call with its arguments, each
function response the result of the call it names (by its id; where the session keeps no ids,
as ADK's of early 2025, the earliest unanswered call of its tool) (its `result` where ADK wrapped a value,
else the object as JSON, where a `status` of error or an `error` key marks a failed call for
the levels), the app the agent, the first event's time the trace's. No outcome: unknown.

An eval result is what `adk eval` (and `adk web`'s eval tab) saves of one run of an eval set
(`<app>/.adk/eval_history/*.evalset_result.json`, the `EvalSetResult` model; ADK 1.x wrote its
JSON as one JSON string, `json.dumps(result.model_dump_json())`, which other tools writing the
format copy): `eval_set_result_id`, `eval_set_result_name` (the app, the eval set and the
time), `eval_set_id`, `creation_timestamp` and `eval_case_results`, each case's `eval_id`,
`final_eval_status` (1 passed, 2 failed, 3 not evaluated), its metrics, `session_details` (the
session the case ran in, where ADK kept it) and `eval_metric_result_per_invocation`, each with
the `actual_invocation` (`user_content`, `final_response`, and `intermediate_data`: either
`tool_uses`, `tool_responses` and `intermediate_responses`, or `invocation_events`, each an
`author` and a `content`) beside the expected one. tRPC-Agent-Go writes the same format with
camelCase names, `passed` and `failed` as the statuses, a message's text as `content`, and an
invocation's calls as `tools` (`id`, `name`, `arguments`, `result`). Each case is one trace: its session read as
above where the result holds it, else its actual invocations in order (the user's content,
the calls and their responses, the agents' texts, the final response); `final_eval_status`
the outcome (not evaluated: unknown), the app the agent, the first invocation's time (else
the result's) the trace's, the result's id and the case's its id. Expected invocations and
metric scores are not read.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from transforms._chat_shapes import assistant_reply, epoch_text
from transforms.gemini_cli import function_calls, spoken_text

__all__ = [
    "ADK_KEYS",
    "adk_eval_cases",
    "adk_session_record",
    "is_adk_eval_result",
    "is_adk_session",
]

ADK_KEYS: dict[str, Any] = {
    "messages_field": "messages",
    "id_fields": ["id"],
    "agent_id_field": "app",
    "created_at_field": "started",
    "success": "passed",
}
"""The chat mapping's keys for a record of `adk_session_record` (no outcome: unknown) and of
`adk_eval_cases` (its verdict)."""

_VERDICTS = {1: True, 2: False, "PASSED": True, "FAILED": False}
"""ADK's `EvalStatus` (an integer enum; its name where a tool writes that): not evaluated,
3, is no verdict."""


def _field(value: dict[str, Any], snake: str, camel: str) -> Any:
    """A field written by the model's name (snake_case) or its alias (camelCase)."""
    return value[snake] if snake in value else value.get(camel)


def is_adk_session(value: Any) -> bool:
    """An ADK session: its `id`, `app_name` (or `appName`), `user_id` (or `userId`) and
    `events`."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("id"), str)
        and isinstance(_field(value, "app_name", "appName"), str)
        and isinstance(_field(value, "user_id", "userId"), str)
        and isinstance(value.get("events"), list)
    )


def _result(response: Any) -> str:
    """A function response's content: the value ADK wrapped as `{"result": value}` (text as it
    is), else the tool's object as JSON."""
    if isinstance(response, dict) and response.keys() == {"result"}:
        response = response["result"]
    if isinstance(response, str):
        return response
    return json.dumps(response, ensure_ascii=False)


def _name(call: dict[str, Any]) -> str | None:
    """A call's or a response's tool name (None where it has none a name can be: the mapping
    says what is wrong with the call)."""
    name = call.get("name")
    return name if isinstance(name, str) else None


@dataclass
class _Calls:
    """The calls made and not yet answered, by tool name: ADK sessions of early 2025 keep no
    call ids, so a response without one answers the earliest open call of its tool."""

    open: dict[str | None, deque[Any]] = field(default_factory=lambda: defaultdict(deque))
    made: int = 0

    def call(self, call: dict[str, Any]) -> tuple[Any, Any, str]:
        self.made += 1
        ((ident, name, arguments),) = function_calls([call])
        ident = ident or f"adk-call-{self.made}"
        self.open[_name(call)].append(ident)
        return ident, name, arguments

    def answer(self, answer: dict[str, Any]) -> dict[str, Any]:
        waiting = self.open[_name(answer)]
        ident = answer.get("id")
        if ident and ident in waiting:
            waiting.remove(ident)
        elif not ident and waiting:
            ident = waiting.popleft()
        return {"role": "tool", "tool_call_id": ident, "content": _result(answer.get("response"))}


def _said(event: dict[str, Any], calls: _Calls) -> list[dict[str, Any]]:
    """An event as chat messages (none for one that only changes the state)."""
    content = event.get("content")
    found = content.get("parts") if isinstance(content, dict) else None
    parts = [part for part in found if isinstance(part, dict)] if isinstance(found, list) else []
    text = spoken_text(parts)
    made, answers = (
        [value for part in parts if isinstance(value := _field(part, snake, camel), dict)]
        for snake, camel in (
            ("function_call", "functionCall"),
            ("function_response", "functionResponse"),
        )
    )
    if event.get("author") == "user" and not made and not answers:
        return [{"role": "user", "content": text}] if text.strip() else []
    messages: list[dict[str, Any]] = []
    if text.strip() or made:
        reply = assistant_reply(text if text.strip() else None, [calls.call(c) for c in made])
        messages.append(reply)
    messages.extend(calls.answer(answer) for answer in answers)
    return messages


def _started(events: list[Any]) -> str | None:
    """The first event's time (`timestamp`, seconds) as ISO-8601 text in UTC."""
    for event in events:
        if isinstance(event, dict) and "timestamp" in event:
            return epoch_text(event["timestamp"])
    return None


def _session_messages(events: list[Any]) -> list[Any]:
    messages: list[Any] = []
    calls = _Calls()
    for event in events:
        if isinstance(event, dict):
            messages.extend(_said(event, calls))
        else:
            messages.append(event)  # the mapping says why
    return messages


def adk_session_record(value: Any) -> Any:
    """An ADK session (`is_adk_session`) as a chat record: its messages, `id`, `app` and
    `started`; anything else as it is."""
    if not is_adk_session(value):
        return value
    events = value["events"]
    record: dict[str, Any] = {
        "messages": _session_messages(events),
        "id": value["id"],
        "app": _field(value, "app_name", "appName"),
    }
    started = _started(events)
    if started is not None:
        record["started"] = started
    return record


def is_adk_eval_result(value: Any) -> bool:
    """An ADK eval result: its `eval_set_result_id` and `eval_case_results` (or their
    camelCase aliases)."""
    return (
        isinstance(value, dict)
        and isinstance(_field(value, "eval_set_result_id", "evalSetResultId"), str)
        and isinstance(_field(value, "eval_case_results", "evalCaseResults"), list)
    )


def _content(author: str, content: Any) -> dict[str, Any]:
    """A Gemini content as the event of a session that `_said` reads (a message written as
    `role` and `content` text, as tRPC-Agent-Go writes the format, as its one text part)."""
    if isinstance(content, dict) and "parts" not in content and "content" in content:
        content = {"parts": [{"text": content["content"]}]}
    return {"author": author, "content": content}


def _tool_events(tools: list[Any]) -> list[dict[str, Any]]:
    """tRPC-Agent-Go's `tools` of an invocation (`id`, `name`, `arguments`, `result`) as the
    calls and responses of a session."""
    used = [tool for tool in tools if isinstance(tool, dict)]
    calls = [
        {"function_call": {"id": t.get("id"), "name": t.get("name"), "args": t.get("arguments")}}
        for t in used
    ]
    answers = [
        {"function_response": {"id": t.get("id"), "name": t.get("name"), "response": t["result"]}}
        for t in used
        if "result" in t
    ]
    return [_content("agent", {"parts": calls}), _content("agent", {"parts": answers})]


def _invocation_events(invocation: dict[str, Any]) -> list[dict[str, Any]]:
    """An actual invocation as session events: the user's content, what happened in between,
    the final response."""
    events = [_content("user", _field(invocation, "user_content", "userContent"))]
    between = _field(invocation, "intermediate_data", "intermediateData")
    between = between if isinstance(between, dict) else {}
    logged = _field(between, "invocation_events", "invocationEvents")
    if isinstance(invocation.get("tools"), list):
        events.extend(_tool_events(invocation["tools"]))
    elif isinstance(logged, list):
        events.extend(event for event in logged if isinstance(event, dict))
    else:
        uses = _field(between, "tool_uses", "toolUses") or []
        answers = _field(between, "tool_responses", "toolResponses") or []
        said = _field(between, "intermediate_responses", "intermediateResponses") or []
        events.append(_content("agent", {"parts": [{"function_call": use} for use in uses]}))
        events.append(
            _content("agent", {"parts": [{"function_response": answer} for answer in answers]})
        )
        events.extend(
            _content(str(pair[0]), {"parts": pair[1]})
            for pair in said
            if isinstance(pair, list | tuple) and len(pair) == 2 and isinstance(pair[1], list)
        )
    events.append(_content("agent", _field(invocation, "final_response", "finalResponse")))
    return events


def _app(result: dict[str, Any]) -> str | None:
    """The app an eval result ran: ADK names a result `<app>_<eval set>_<time>`."""
    name = _field(result, "eval_set_result_name", "evalSetResultName")
    eval_set = _field(result, "eval_set_id", "evalSetId")
    if isinstance(name, str) and isinstance(eval_set, str) and f"_{eval_set}_" in name:
        return name.split(f"_{eval_set}_", 1)[0] or None
    return None


def _case_record(result: dict[str, Any], case: Any) -> Any:
    """One eval case of a result as a chat record (`adk_eval_cases`)."""
    if not isinstance(case, dict):
        return case  # the mapping says why
    session = _field(case, "session_details", "sessionDetails")
    record: dict[str, Any]
    if is_adk_session(session):
        record = adk_session_record(session)
    else:
        per = _field(case, "eval_metric_result_per_invocation", "evalMetricResultPerInvocation")
        invocations = [
            actual
            for entry in (per if isinstance(per, list) else [])
            if isinstance(entry, dict)
            and isinstance(actual := _field(entry, "actual_invocation", "actualInvocation"), dict)
        ]
        events = [event for actual in invocations for event in _invocation_events(actual)]
        record = {"messages": _session_messages(events)}
        stamps = [
            _field(actual, "creation_timestamp", "creationTimestamp") for actual in invocations
        ]
        started = epoch_text(next((s for s in stamps if s is not None), None))
        started = started or epoch_text(_field(result, "creation_timestamp", "creationTimestamp"))
        if started is not None:
            record["started"] = started
    app = record.get("app") or _app(result)
    if app is not None:
        record["app"] = app
    result_id = _field(result, "eval_set_result_id", "evalSetResultId")
    record["id"] = f"{result_id}/{_field(case, 'eval_id', 'evalId')}"
    verdict = _field(case, "final_eval_status", "finalEvalStatus")
    if isinstance(verdict, str):
        verdict = verdict.upper()
    if isinstance(verdict, int | str) and verdict in _VERDICTS:
        record["passed"] = _VERDICTS[verdict]
    return record


def adk_eval_cases(result: dict[str, Any]) -> list[Any]:
    """Each eval case of an ADK eval result (`is_adk_eval_result`) as a chat record, in the
    result's order."""
    cases = _field(result, "eval_case_results", "evalCaseResults")
    return [_case_record(result, case) for case in cases]
