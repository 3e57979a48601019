"""pydantic-ai message histories (what an agent run's `all_messages_json()` gives, the way
pydantic-ai's docs store a run: `ModelMessagesTypeAdapter` JSON) as chat trajectories, mapped
by the chat mapping with `PYDANTIC_AI_KEYS` (docs/formats.md).

A history is a list of messages, each `kind` `request` (what pydantic-ai sent the model) or
`response` (what the model answered), holding `parts` of a `part_kind`: a request's
`system-prompt`, `user-prompt`, `tool-return` (a tool's result, with the `tool_call_id` it
answers and, since 2.x, its `outcome`) and `retry-prompt` (pydantic-ai asking the model again:
after a tool's arguments failed validation or the tool raised `ModelRetry`, or after an output
that failed its validation); a response's `text`, `tool-call` (`tool_name`, `args`,
`tool_call_id`), `thinking`, `builtin-tool-call` and `-return`. A file holds one history (a
`.json` file as `all_messages_json()` writes it), an array of them, or one a line. The
trajectory, one a history:
- the user prompts are the user's, the first the objective; system prompts are the system's;
- a response's text is the assistant's, the last its answer; each tool call a call (its
  arguments as JSON); a call of the run's output tool (`final_result`, `final_result_<Type>`
  for a union of output types: how a structured output is given) is no tool call but the
  output, its arguments' JSON an answer of its own, and the return pydantic-ai sends it
  ("Final result processed.") no observation;
- a `tool-return` is the call's observation, a failed call where its `outcome` is failed,
  denied or interrupted; a `retry-prompt` that names a tool is a failed call's observation (the
  validation errors, or what `ModelRetry` said); one that names none (an output rejected) is
  not read, nor `thinking` parts and usage;
- the first response's `model_name` is the agent; the first message's `run_id` (else its
  `conversation_id`) names the trajectory, else (before 2.x) the SHA-256 of its JSON does.
A history records no outcome: unknown (SPEC 1).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from transforms._chat_shapes import assistant_reply, log_keys

__all__ = [
    "PYDANTIC_AI_KEYS",
    "is_pydantic_ai_history",
    "is_pydantic_ai_message",
    "pydantic_ai_record",
]

PYDANTIC_AI_KEYS = log_keys("run")
"""The chat mapping's keys for a record of `pydantic_ai_record` (no success field: unknown)."""

_FAILED = frozenset({"failed", "denied", "interrupted", "retried"})
"""A `tool-return`'s outcomes that say the call did not do its work (`retried`: the tool raised
`ModelRetry`, as a `retry-prompt` said before 2.x)."""


def is_pydantic_ai_message(value: Any) -> bool:
    """One message of a history: a `request` or `response` whose parts name their kind."""
    return (
        isinstance(value, dict)
        and value.get("kind") in ("request", "response")
        and isinstance(value.get("parts"), list)
        and all(isinstance(part, dict) and "part_kind" in part for part in value["parts"])
    )


def is_pydantic_ai_history(value: Any) -> bool:
    """A pydantic-ai message history: a list of messages, each a `request` or a `response`
    whose parts each name their `part_kind`."""
    return isinstance(value, list) and bool(value) and all(map(is_pydantic_ai_message, value))


def _text(content: Any) -> str:
    """A prompt's text: the string, or the strings of a list of user content (images and
    other files left out)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(item for item in content if isinstance(item, str))
    return ""


def _said(content: Any) -> str:
    """A tool's result as text: a string as it is, anything else as JSON."""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def _arguments(args: Any) -> str:
    """A call's arguments as JSON text (pydantic-ai keeps them as an object or as the text
    the model sent)."""
    if isinstance(args, str):
        return args
    return json.dumps(args if args is not None else {}, ensure_ascii=False)


def _is_output_tool(name: Any) -> bool:
    """pydantic-ai's output tool: `final_result`, or `final_result_<Type>` for each type of a
    union of output types."""
    return isinstance(name, str) and (name == "final_result" or name.startswith("final_result_"))


def _request(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    said: list[dict[str, Any]] = []
    for part in parts:
        kind = part["part_kind"]
        if _is_output_tool(part.get("tool_name")):
            continue  # what pydantic-ai tells the model of its output: no tool's result
        if kind == "system-prompt":
            said.append({"role": "system", "content": _text(part.get("content"))})
        elif kind == "user-prompt":
            said.append({"role": "user", "content": _text(part.get("content"))})
        elif kind == "tool-return":
            result = {"role": "tool", "tool_call_id": part.get("tool_call_id")}
            result["content"] = _said(part.get("content"))
            if part.get("outcome") in _FAILED:
                result["is_error"] = True
            said.append(result)
        elif kind == "retry-prompt" and part.get("tool_name") is not None:
            content = _said(part.get("content"))
            said.append(
                {
                    "role": "tool",
                    "tool_call_id": part.get("tool_call_id"),
                    "content": content,
                    "is_error": True,
                }
            )
    return said


def _response(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    texts = [str(p.get("content") or "") for p in parts if p["part_kind"] == "text"]
    calls = [p for p in parts if p["part_kind"] in ("tool-call", "builtin-tool-call")]
    outputs = [_arguments(c.get("args")) for c in calls if _is_output_tool(c.get("tool_name"))]
    calls = [c for c in calls if not _is_output_tool(c.get("tool_name"))]
    said: list[dict[str, Any]] = []
    if any(text.strip() for text in texts) or calls:
        made = [
            (c.get("tool_call_id"), c.get("tool_name"), _arguments(c.get("args"))) for c in calls
        ]
        said.append(assistant_reply("".join(texts), made))
    said.extend(assistant_reply(output, []) for output in outputs)
    for part in parts:  # a provider's own tool (web search) answers in the same response
        if part["part_kind"] == "builtin-tool-return":
            content = _said(part.get("content"))
            said.append(
                {"role": "tool", "tool_call_id": part.get("tool_call_id"), "content": content}
            )
    return said


def pydantic_ai_record(history: list[dict[str, Any]]) -> dict[str, Any]:
    """A history (`is_pydantic_ai_history`) as one chat record."""
    messages: list[dict[str, Any]] = []
    for message in history:
        parts = message["parts"]
        messages.extend(_request(parts) if message["kind"] == "request" else _response(parts))
    first = history[0]
    models = (m.get("model_name") for m in history if m["kind"] == "response")
    record: dict[str, Any] = {
        "messages": messages,
        "started": _first_time(history),
        "model": next((m for m in models if isinstance(m, str) and m), None),
    }
    run = first.get("run_id") or first.get("conversation_id")
    if not isinstance(run, str) or not run:  # before 2.x: the content names the history
        text = json.dumps(history, sort_keys=True, ensure_ascii=False)
        run = "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    record["run"] = run
    return record


def _first_time(history: list[dict[str, Any]]) -> Any:
    """The first time the history carries: a message's, else a part's (older versions time a
    request's parts, not the request)."""
    for message in history:
        if message.get("timestamp"):
            return message["timestamp"]
        for part in message["parts"]:
            if part.get("timestamp"):
                return part["timestamp"]
    return None
