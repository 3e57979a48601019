"""Conversations in the Gemini API's shape (`contents`: what `generate_content` is sent, and
what a chat's `get_history()` gives), written as OpenAI's messages for the chat mapping
(docs/import.md).

A content is a `role` (`user` or `model`) and its `parts`, each one kind keyed by its name:
`text` (a model's part marked `thought` is its reasoning), `functionCall` (`name`, `args`,
`id` where the caller keeps one) and `functionResponse` (`name`, `response`, `id`), in camelCase
as the API writes them or snake_case as the Python SDK's `model_dump()` does.

`with_gemini_contents` writes them as OpenAI's: a user content's text its content and each
`functionResponse` the result of the call it answers (by `id`, else the earliest waiting call
of its name); a model content's text (not its thoughts) the assistant's, its `functionCall`s
its calls (the arguments as JSON). A response's `result` or `output`, where it is text, is the
result's text, else the response's JSON; a response with an `error` is a failed call. Lists
without such contents are kept as they are.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

__all__ = ["is_gemini_content", "with_gemini_contents"]

_KINDS = {
    "text",
    "thought",
    "thoughtSignature",
    "thought_signature",
    "functionCall",
    "function_call",
    "functionResponse",
    "function_response",
    "inlineData",
    "inline_data",
    "fileData",
    "file_data",
    "executableCode",
    "executable_code",
    "codeExecutionResult",
    "code_execution_result",
    "videoMetadata",
    "video_metadata",
}
"""The fields a Gemini part may have (camelCase and the SDK's snake_case)."""


def _field(part: dict[str, Any], camel: str, snake: str) -> Any:
    return part.get(camel, part.get(snake))


def is_gemini_content(value: Any) -> bool:
    """A Gemini content: a `user` or `model` role and parts keyed by kind (no `type`)."""
    if not isinstance(value, dict) or value.get("role") not in ("user", "model"):
        return False
    parts = value.get("parts")
    return (
        isinstance(parts, list)
        and bool(parts)
        and all(isinstance(p, dict) and p and set(p) <= _KINDS for p in parts)
    )


def _response_text(response: Any) -> tuple[str, bool]:
    """A function response's text, and whether it reports an error."""
    if isinstance(response, dict):
        if "error" in response:
            error = response["error"]
            return (
                error if isinstance(error, str) else json.dumps(error, ensure_ascii=False)
            ), True
        for key in ("result", "output"):
            if isinstance(response.get(key), str) and len(response) == 1:
                return response[key], False
    return json.dumps(response, ensure_ascii=False), False


def _model(parts: list[Any], counter: list[int]) -> dict[str, Any]:
    texts = [
        p["text"] for p in parts if isinstance(p.get("text"), str) and p.get("thought") is not True
    ]
    calls = []
    for part in parts:
        call = _field(part, "functionCall", "function_call")
        if isinstance(call, dict):
            counter[0] += 1
            ident = call.get("id") or f"gemini-call-{counter[0]}"
            arguments = json.dumps(call.get("args") or {}, ensure_ascii=False)
            calls.append(
                {
                    "id": ident,
                    "type": "function",
                    "function": {"name": call.get("name"), "arguments": arguments},
                }
            )
    said: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) or None}
    if calls:
        said["tool_calls"] = calls
    return said


def with_gemini_contents(messages: list[Any]) -> list[Any]:
    """`messages` with Gemini contents written as OpenAI's (above); lists without them are
    kept as they are."""
    if not any(is_gemini_content(m) and m["role"] == "model" for m in messages):
        return messages
    written: list[Any] = []
    waiting: dict[Any, deque[str]] = {}
    counter = [0]
    for message in messages:
        if not is_gemini_content(message):
            written.append(message)
            continue
        parts = message["parts"]
        if message["role"] == "model":
            said = _model(parts, counter)
            for call in said.get("tool_calls", []):
                name = call["function"]["name"]
                if isinstance(name, str):
                    waiting.setdefault(name, deque()).append(call["id"])
            written.append(said)
            continue
        texts = [p["text"] for p in parts if isinstance(p.get("text"), str)]
        if texts:
            written.append({"role": "user", "content": "\n".join(texts)})
        for part in parts:
            response = _field(part, "functionResponse", "function_response")
            if not isinstance(response, dict):
                continue
            name = response.get("name")
            queue: deque[str] = waiting.get(name, deque()) if isinstance(name, str) else deque()
            ident = response.get("id")
            if isinstance(ident, str) and ident in queue:
                queue.remove(ident)
            else:
                ident = queue.popleft() if queue else ident
            text, failed = _response_text(response.get("response"))
            answer: dict[str, Any] = {"role": "tool", "tool_call_id": ident, "content": text}
            if failed:
                answer["is_error"] = True
            written.append(answer)
    return written
