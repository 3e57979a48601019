"""OpenHands' completion logs as chat trajectories, mapped by the chat mapping with
`COMPLETION_LOG_KEYS` (docs/formats.md).

With completion logging on (`log_completions`; the evaluation harness's
`llm_completions/<instance>/`), OpenHands writes each call to the model as one JSON file:
`messages` (the conversation so far, as sent), `response` (the model's reply, as LiteLLM gives
it: `model`, `choices[0].message` with its text and `tool_calls`), `kwargs`, `cost` and
`timestamp` (Unix seconds). Where OpenHands mocks function calling for a model without it,
`messages` is the conversation rewritten as text for the model (the tools described in the
system prompt, an in-context example before the task, calls as `<function=...>` text), and
the conversation as OpenHands keeps it, with real tool calls, is beside it: `fncall_messages`
and `fncall_response` (OpenHands 0.x), `raw_messages` (the V1 SDK, whose `response` is then the
reply with its calls and `raw_response` the model's text).

A log is one trace: the conversation with tool calls (`fncall_messages` or `raw_messages`
where they are there, else `messages`) and then the reply with its calls; the model the agent, the log's time the trace's. A command whose result
says it exited with a code other than 0 ("[The command completed with exit code 1.]") is a
failed call, and `finish`'s `message` the answer. Each call of a run writes a log holding the
conversation so far, so the logs of one conversation share its trace id (the model and the
conversation up to its first user message): read together, the last one read is the trace,
and the earlier ones are quarantined as its `duplicate_id`; read on a later night, a longer
log replaces the stored trace. OpenHands records no outcome in a log: unknown.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from transforms._chat_shapes import epoch_text

__all__ = ["COMPLETION_LOG_KEYS", "completion_log_record", "is_completion_log"]

COMPLETION_LOG_KEYS: dict[str, Any] = {
    "messages_field": "messages",
    "id_fields": ["conversation"],
    "agent_id_field": "model",
    "created_at_field": "called",
    "success": "solved",
    "final_answer_tools": ["finish"],
}
"""The chat mapping's keys for a record of `completion_log_record`: `solved` is never there."""

_CALLED_WITH_TOOLS = (("raw_messages", "response"), ("fncall_messages", "fncall_response"))
"""Where function calling was mocked, the conversation with its tool calls and the reply
with its: the V1 SDK keeps them as `raw_messages` and `response` (`raw_response` is the
model's text), OpenHands 0.x as `fncall_messages` and `fncall_response`."""
_EXIT_CODE = re.compile(
    r"\[(?:The command completed|Command finished) with exit code (-?\d+)\.?\]\s*\Z"
)
_NO_TIME = "1970-01-01T00:00:00+00:00"


def is_completion_log(value: Any) -> bool:
    """An OpenHands completion log: the messages sent, the response and the call's time."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("messages"), list)
        and isinstance(value.get("response"), dict)
        and "timestamp" in value
        and ("kwargs" in value or "cost" in value)
    )


def _reply(response: Any) -> dict[str, Any] | None:
    choices = response.get("choices") if isinstance(response, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    return {**message, "role": "assistant"} if isinstance(message, dict) else None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text")) for p in content if isinstance(p, dict) and "text" in p)
    return ""


def _with_exit_codes(messages: list[Any]) -> list[Any]:
    """Tool results whose command exited with a code other than 0 (-1: still running)
    flagged as errors."""
    flagged = []
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "tool":
            code = _EXIT_CODE.search(_text(message.get("content")).rstrip())
            if code is not None and int(code.group(1)) not in (0, -1):
                message = {**message, "is_error": True}
        flagged.append(message)
    return flagged


def _without_caching(value: Any) -> Any:
    """`value` without the prompt-caching marks OpenHands moves from message to message
    (`cache_control` on the last ones sent), which are no part of the conversation."""
    if isinstance(value, dict):
        return {k: _without_caching(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_caching(v) for v in value]
    return value


def _conversation(messages: list[Any], model: Any) -> str:
    """The key of the conversation a log belongs to: the model and the messages up to the
    first user message (the system prompt and the task), which every later log repeats."""
    first = next(
        (i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"),
        len(messages) - 1,
    )
    opening = json.dumps(
        [model, _without_caching(messages[: first + 1])], sort_keys=True, default=str
    )
    return hashlib.sha256(opening.encode("utf-8", "surrogatepass")).hexdigest()


def completion_log_record(value: Any) -> Any:
    """The chat record of one completion log; anything else as it is, for the mapping to
    reject with its reason."""
    if not is_completion_log(value):
        return value
    messages, response = value["messages"], value["response"]
    for sent, replied in _CALLED_WITH_TOOLS:
        if isinstance(value.get(sent), list):
            messages, response = value[sent], value.get(replied, response)
            break
    model = response.get("model") if isinstance(response, dict) else None
    if not isinstance(model, str) or not model:
        model = value["response"].get("model")
    reply = _reply(response)
    record = {
        "messages": _with_exit_codes([*messages, *([reply] if reply else [])]),
        "conversation": _conversation(messages, model),
        "called": epoch_text(value.get("timestamp")) or _NO_TIME,
    }
    if isinstance(model, str) and model:
        record["model"] = model
    return record
