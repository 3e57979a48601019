"""Chat messages as other tools write them, read by the chat mapping (`transforms.chat`):
OpenAI's legacy function calling, Anthropic's content blocks, tool results that report errors
as JSON, and the answer an agent gives through a final-answer tool.

Pure functions on parsed JSON values; the mapping's rules (docs/import.md) call them.
"""

from __future__ import annotations

import ast
import json
import re
from collections import deque
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "as_openai_call",
    "assistant_reply",
    "code_final_answer",
    "epoch_text",
    "final_answer",
    "is_error_result",
    "log_keys",
    "parts_text",
    "with_content_blocks",
    "with_response_items",
    "with_tool_calls",
]

_ANSWER_KEYS = ("final_answer", "answer", "result", "output", "text", "message")
_ERROR_FIELD = re.compile(r'^\{\s*"error"\s*:\s*(null|"((?:[^"\\]|\\.)*)")')
"""The `error` field that opens a JSON result cut short (ToolBench cuts long results)."""
"""The argument of a final-answer tool that holds the answer, tried in this order."""


def epoch_text(stamp: Any, per_second: int = 1) -> str | None:
    """A Unix time (seconds, or `per_second`ths of a second) as ISO-8601 text in UTC; None for
    anything that is not a number or not a time (ADK's event times, AgentBench's samples')."""
    if not isinstance(stamp, int | float) or isinstance(stamp, bool):
        return None
    try:
        return datetime.fromtimestamp(stamp / per_second, UTC).isoformat()
    except (ValueError, OverflowError, OSError):
        return None


def log_keys(id_field: str) -> dict[str, Any]:
    """The chat mapping's keys for a record that a reader builds from an agent's own log
    (Claude Code, Codex, Gemini CLI, Qwen Code, a pydantic-ai history): its `messages`, its
    id in `id_field`, the agent (the model) in `model`, its first time in `started`, and no
    success field: such a log records no outcome (unknown, SPEC 1)."""
    return {
        "messages_field": "messages",
        "id_fields": [id_field],
        "agent_id_field": "model",
        "created_at_field": "started",
    }


def as_openai_call(call: Any, name_key: str) -> Any:
    """A tool call that names its tool in `name_key` and gives `arguments` as an object
    (Inspect AI's `function`, tau2-bench's `name`) in OpenAI's shape; a call already in that
    shape, or not a call at all, as it is (the mapping says why)."""
    if not isinstance(call, dict) or isinstance(call.get("function"), dict):
        return call
    return {
        "id": call.get("id"),
        "type": "function",
        "function": {"name": call.get(name_key), "arguments": call.get("arguments")},
    }


def assistant_reply(text: str | None, calls: list[tuple[Any, Any, Any]]) -> dict[str, Any]:
    """An assistant message in OpenAI's shape: its text (None where it says nothing), and the
    tool calls it makes (each its id, its tool's name, its arguments), for producers that keep
    them in a shape of their own (Gemini CLI, pydantic-ai, Responses API items, Codex)."""
    reply: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        reply["tool_calls"] = [
            {"id": ident, "type": "function", "function": {"name": name, "arguments": arguments}}
            for ident, name, arguments in calls
        ]
    return reply


def parts_text(content: Any, kind: str | None = None) -> str:
    """A message's text, read leniently: a string as it is, a list of parts as the string
    `text` of its parts joined by line breaks (only parts of type `kind` where one is
    given), anything else as "". For recognising what a message is (a prompt, a context
    block), not for the mapping's own reading, which says why content is malformed."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        part["text"]
        for part in content
        if isinstance(part, dict)
        and isinstance(part.get("text"), str)
        and (kind is None or part.get("type") == kind)
    )


def with_tool_calls(messages: list[Any]) -> list[Any]:
    """`messages` with OpenAI's legacy function calling (before tool calls, 2023: an assistant
    message's `function_call` {name, arguments}, answered by a message of role `function`
    with the function's `name`) written as tool calls: the call gets the id `function-N` (N
    counts the calls), and each `function` message becomes a `tool` message answering the
    earliest unanswered call of its name. Messages of the current shape are kept as they are;
    a `function` message that no call of its name awaits gets the id `function NAME`, which
    no call has, and the mapping rejects it as unmatched."""
    if not any(
        isinstance(m, dict) and ("function_call" in m or m.get("role") == "function")
        for m in messages
    ):
        return messages
    waiting: dict[str, deque[str]] = {}
    written: list[Any] = []
    calls = 0
    for message in messages:
        if not isinstance(message, dict):
            written.append(message)
            continue
        call = message.get("function_call")
        if message.get("role") == "assistant" and isinstance(call, dict):
            calls += 1
            call_id = f"function-{calls}"
            waiting.setdefault(str(call.get("name")), deque()).append(call_id)
            rest = {k: v for k, v in message.items() if k != "function_call"}
            tool_call = {"id": call_id, "type": "function", "function": call}
            written.append({**rest, "tool_calls": [*(rest.get("tool_calls") or []), tool_call]})
        elif message.get("role") == "function":
            ids = waiting.get(str(message.get("name")))
            rest = {k: v for k, v in message.items() if k not in ("role", "name")}
            unmatched = f"function {message.get('name')}"  # the mapping rejects it, naming it
            written.append(
                {**rest, "role": "tool", "tool_call_id": ids.popleft() if ids else unmatched}
            )
        else:
            written.append(message)
    return written


def _blocks(content: Any, kind: str) -> list[dict[str, Any]]:
    if not isinstance(content, list):
        return []
    return [part for part in content if isinstance(part, dict) and part.get("type") == kind]


_CALL_ITEMS = {"function_call": "arguments", "custom_tool_call": "input"}
"""Responses API items that call a tool, with the field holding the call's arguments."""

_OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output"})

_TEXT_PARTS = frozenset({"input_text", "output_text", "refusal"})
"""The text parts of a Responses API `message` item's content."""

_AGENTS_SDK_FAILURE = "An error occurred while running the tool."
"""How the OpenAI Agents SDK's default `failure_error_function` opens the output it gives the
model in place of a tool's result when the tool raised."""


def _kind(value: dict[str, Any]) -> str | None:
    """An item's or part's `type` where it is text (a list or object there is no kind)."""
    kind = value.get("type")
    return kind if isinstance(kind, str) else None


def _response_message(item: dict[str, Any]) -> Any:
    """A Responses API `message` item (a role, content parts `input_text` / `output_text`)
    as a chat message with its text; another item as it is."""
    content = item.get("content")
    parts = [p for p in content if isinstance(p, dict)] if isinstance(content, list) else []
    if not parts or not all(_kind(p) in _TEXT_PARTS for p in parts):
        return item
    text = "\n".join(str(p.get("text") or p.get("refusal") or "") for p in parts)
    return {"role": item.get("role"), "content": text}


def _response_item(item: Any) -> list[Any]:
    """One Responses API item as chat messages (none for a `reasoning` item)."""
    if not isinstance(item, dict):
        return [item]
    kind = _kind(item)
    if kind in _CALL_ITEMS:
        call = (item.get("call_id"), item.get("name"), item.get(_CALL_ITEMS[kind]))
        return [assistant_reply(None, [call])]
    if kind in _OUTPUT_ITEMS:
        output = item.get("output")
        text = output if isinstance(output, str) else parts_text(output)
        said = {"role": "tool", "tool_call_id": item.get("call_id"), "content": text}
        if text.startswith(_AGENTS_SDK_FAILURE):
            said["is_error"] = True
        return [said]
    if kind == "reasoning":
        return []
    if kind == "message" or (item.get("type") is None and "role" in item):
        return [_response_message(item)]
    return [item]


def with_response_items(messages: list[Any]) -> list[Any]:
    """`messages` with OpenAI Responses API items (what the OpenAI Agents SDK's
    `result.to_input_list()` gives, and its sessions keep) written as chat messages: a
    `message` item's text parts joined, a `function_call` (or `custom_tool_call`) an
    assistant's tool call, its `..._output` the tool message answering it (failed where it
    is the Agents SDK's default text for a tool that raised), `reasoning` items left out.
    Lists without a tool call item or output are kept as they are."""
    if not any(
        isinstance(m, dict) and (_kind(m) in _CALL_ITEMS or _kind(m) in _OUTPUT_ITEMS)
        for m in messages
    ):
        return messages
    return [said for item in messages for said in _response_item(item)]


def _typed_block(block: Any) -> Any:
    """A content block as the Messages API types it: Amazon Bedrock's Converse API (and the
    agents that keep its messages, such as Strands) keys a block by its kind instead,
    `{"toolUse": {toolUseId, name, input}}`, `{"toolResult": {toolUseId, content, status}}`
    (its content blocks `{"text"}` or `{"json"}`); other blocks as they are."""
    if not isinstance(block, dict) or "type" in block or len(block) != 1:
        return block
    ((kind, fields),) = block.items()
    if kind == "toolUse" and isinstance(fields, dict):
        return {
            "type": "tool_use",
            "id": fields.get("toolUseId"),
            "name": fields.get("name"),
            "input": fields.get("input"),
        }
    if kind == "toolResult" and isinstance(fields, dict):
        content = fields.get("content")
        parts = content if isinstance(content, list) else []
        said = [
            p["text"] if "text" in p else json.dumps(p.get("json"), ensure_ascii=False)
            for p in parts
            if isinstance(p, dict) and ("text" in p or "json" in p)
        ]
        typed = {
            "type": "tool_result",
            "tool_use_id": fields.get("toolUseId"),
            "content": "\n".join(str(t) for t in said) if parts else content,
        }
        if fields.get("status") == "error":
            typed["is_error"] = True
        return typed
    return block


def _with_typed_blocks(messages: list[Any]) -> list[Any]:
    """`messages` with Bedrock's keyed tool blocks typed (`_typed_block`)."""
    keyed = any(
        isinstance(m, dict)
        and isinstance(m.get("content"), list)
        and any(isinstance(b, dict) and ("toolUse" in b or "toolResult" in b) for b in m["content"])
        for m in messages
    )
    if not keyed:
        return messages
    return [
        {**m, "content": [_typed_block(b) for b in m["content"]]}
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        else m
        for m in messages
    ]


def _tool_result(result: dict[str, Any]) -> dict[str, Any]:
    """A `tool_result` block as the tool message answering its call. Amp writes its threads'
    results its own way: `toolUseID`, and a `run` with its `status` (`done`, else the call
    failed or was refused) and its `result` (text, or an object: its JSON)."""
    run = result.get("run")
    answer: dict[str, Any] = {
        "role": "tool",
        "tool_call_id": result.get("tool_use_id", result.get("toolUseID")),
        "content": result.get("content"),
    }
    if "content" not in result and isinstance(run, dict):
        said = run.get("result", run.get("error"))
        answer["content"] = (
            said if isinstance(said, str) or said is None else json.dumps(said, ensure_ascii=False)
        )
        if run.get("status") != "done":
            answer["is_error"] = True
    if result.get("is_error") is True:
        answer["is_error"] = True
    return answer


def with_content_blocks(messages: list[Any]) -> list[Any]:
    """`messages` with Anthropic's content blocks (the Messages API's shape) written as
    OpenAI's: an assistant message's `tool_use` blocks (`id`, `name`, `input`) become its
    `tool_calls`, its text blocks stay its content (`thinking` blocks are not the answer);
    a user message's `tool_result` blocks (`tool_use_id`, `content`: text, or blocks whose
    text parts the mapping joins, `is_error`) become tool messages answering those calls, in order, and its other blocks, if any, stay a user
    message after them. Amazon Bedrock's Converse blocks (`toolUse`, `toolResult` with its
    `status`) are read as these. Messages without such blocks are kept as they are."""
    messages = _with_typed_blocks(messages)
    if not any(
        isinstance(m, dict)
        and (_blocks(m.get("content"), "tool_use") or _blocks(m.get("content"), "tool_result"))
        for m in messages
    ):
        return messages
    written: list[Any] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        uses, results = _blocks(content, "tool_use"), _blocks(content, "tool_result")
        if not isinstance(message, dict) or not (uses or results):
            written.append(message)
            continue
        rest = [
            part
            for part in content or []
            if not (isinstance(part, dict) and part.get("type") in ("tool_use", "tool_result"))
        ]
        if uses:
            calls = [
                {
                    "id": use.get("id"),
                    "type": "function",
                    "function": {"name": use.get("name"), "arguments": use.get("input")},
                }
                for use in uses
            ]
            written.append(
                {
                    **message,
                    "content": rest,
                    "tool_calls": [*(message.get("tool_calls") or []), *calls],
                }
            )
            continue
        written.extend(_tool_result(result) for result in results)
        if rest:
            written.append({**message, "content": rest})
    return written


def is_error_result(text: str, pattern: re.Pattern[str]) -> bool:
    """A tool result is an error when it says so. A JSON object with an `error` key (ToolBench
    writes `{"error": "", "response": ...}` for every call) is an error exactly when that
    value is not empty; any other text when `pattern` is found in it."""
    stripped = text.lstrip()
    if stripped.startswith("{") and '"error"' in stripped:
        try:
            value = json.loads(stripped)
        except ValueError:
            value = None
        if isinstance(value, dict) and "error" in value:
            return value["error"] not in (None, "", False, [], {})
        cut = _ERROR_FIELD.match(stripped)
        if cut is not None:
            return bool(cut.group(2))
    return pattern.search(text) is not None


def final_answer(arguments: str | None) -> str:
    """The answer a final-answer tool was called with: the first of its arguments' answer
    fields (`final_answer`, `answer`, `result`, `output`, `text`, `message`: Letta's
    `send_message`) that is present, as text;
    arguments that hold none give "" (a run that gave up answered nothing); arguments that
    are not a JSON object are the answer as written."""
    if arguments is None:
        return ""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    if not isinstance(value, dict):
        return arguments
    for key in _ANSWER_KEYS:
        if value.get(key) is not None:
            found = value[key]
            return found if isinstance(found, str) else json.dumps(found, ensure_ascii=False)
    return ""


_CODE_BLOCK = re.compile(r"```(?:py|python)?[ \t]*\n(.*?)```", re.DOTALL)
"""A fenced code block of a model's reply (smolagents' CodeAgent writes `Code:` and one)."""


def _answered(call: ast.Call) -> Any:
    """What a final-answer call in code was given: its first argument, else an answer
    keyword; only a literal (a string, a number, a list of them) counts."""
    given = call.args[0] if call.args else None
    for keyword in call.keywords:
        if given is None and keyword.arg in _ANSWER_KEYS:
            given = keyword.value
    if given is None:
        return None
    try:
        return ast.literal_eval(given)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def code_final_answer(text: str, tools: list[str]) -> str | None:
    """The answer a model's reply gave by calling a final-answer tool in its code (a code
    agent's `final_answer("...")`, smolagents'), where the call's argument is a literal: the
    last such call of the reply's code blocks; None where there is none."""
    found: str | None = None
    for block in _CODE_BLOCK.findall(text):
        try:
            tree = ast.parse(block)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        calls = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in tools
        ]
        # in the order they are written (ast.walk goes level by level)
        for node in sorted(calls, key=lambda call: (call.lineno, call.col_offset)):
            value = _answered(node)
            if value is not None:
                found = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return found
