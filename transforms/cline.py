"""Task histories of Cline and the agents built on it (Roo Code, Kilo Code) as chat
trajectories, mapped by the chat mapping with `CLINE_KEYS` (docs/formats.md).

Cline keeps each task in its own folder, `tasks/<task id>/`, and the conversation with the
model in `api_conversation_history.json`: a JSON array of messages (`role`, `content` as
Anthropic's content blocks, from 2025 a `ts` in epoch milliseconds). The first user message
holds the task in `<task>...</task>` and every user message an `<environment_details>` block
the extension writes (open tabs, time, cost; Roo Code's names the mode and the model). With
the XML tool protocol an assistant message's text holds its tool call as an element of the
tool's name whose children are its parameters (`<execute_command><command>ls</command>
</execute_command>`), and the next user message gives the result back as text, opening
`[execute_command for 'ls'] Result:`. Cline runs one tool a message: a later one gets "Tool
[x] was not executed because a tool has already been used in this message". A task ends with
`attempt_completion`, whose `result` is the answer; the user's feedback on it continues the
task. Where the model called tools natively the messages hold `tool_use` and `tool_result`
blocks, which the chat mapping reads as it reads Anthropic's.

A history is one trace: the text inside `<task>` the objective; each tool element a call with
its parameters as arguments (a tool is one Cline, Roo Code or Kilo Code knows, or one a result
names), the text around it a thought (`<thinking>` tags and Cline's "[Response interrupted by
a tool use result ...]" note left out); each result the result of the call it names, failed
where the extension says the tool failed ("The tool execution failed with the following
error", "Tool [x] was not executed", "The user denied this operation", a command's exit code
other than 0); `attempt_completion`'s `result` the answer; the model Roo Code names the agent;
the first message's time the trace's (without one, 1970-01-01). Not steps: the
`<environment_details>` blocks, the harness's note on a reply without a tool ("[ERROR] You
did not use a tool ..."), later user messages (feedback, "New instructions for task
continuation", a subtask's "[new_task completed] Result:"). Cline records no outcome: unknown.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from transforms._chat_shapes import epoch_text

__all__ = ["CLINE_KEYS", "cline_record", "is_cline_history", "opens_cline_task"]

CLINE_KEYS: dict[str, Any] = {
    "messages_field": "messages",
    "id_fields": ["task"],
    "agent_id_field": "model",
    "created_at_field": "started",
    "success": "solved",
    "final_answer_tools": ["attempt_completion"],
}
"""The chat mapping's keys for a record of `cline_record`: `solved` is never there (Cline
records no outcome); the trace id follows the task's id (its folder) or, without one, the
history's content."""

KNOWN_TOOLS = frozenset(
    {
        "access_mcp_resource",
        "apply_diff",
        "ask_followup_question",
        "attempt_completion",
        "browser_action",
        "codebase_search",
        "condense",
        "edit_file",
        "fetch_instructions",
        "generate_image",
        "insert_content",
        "list_code_definition_names",
        "list_files",
        "load_mcp_documentation",
        "new_rule",
        "new_task",
        "plan_mode_respond",
        "read_file",
        "replace_in_file",
        "report_bug",
        "run_slash_command",
        "search_and_replace",
        "search_files",
        "summarize_task",
        "switch_mode",
        "update_todo_list",
        "use_mcp_tool",
        "web_fetch",
        "web_search",
        "write_to_file",
    }
)
"""The XML tools of Cline, Roo Code and Kilo Code (their system prompts' tool lists, 2025)."""

_NO_TIME = "1970-01-01T00:00:00+00:00"
_TASK = re.compile(r"<task>\s*(.*?)\s*</task>", re.DOTALL)
_MODEL = re.compile(r"<model>\s*([^<\n]+?)\s*</model>")
_HEADER = re.compile(r"\[([a-z_]+)\b(.*?)\] Result:", re.DOTALL)
_NOT_EXECUTED = re.compile(r"Tool \[([a-z_]+)\] was not executed because")
_PARAMETER = re.compile(r"<([a-z_]+)>")
_INTERRUPTED = re.compile(r"\[Response interrupted by [^\]]*\]")
_THINKING = re.compile(r"</?thinking>")
_EXIT_CODE = re.compile(r"\bExit code: (-?\d+)")
_LAST_CLOSED = frozenset({"content", "diff"})
"""Parameters whose value may hold the closing tag itself (a file's text): Cline closes them
at its last occurrence."""
_FAILED = (
    "The tool execution failed with the following error",
    "The user denied this operation",
)
_ENVIRONMENT = "<environment_details>"
_ENVIRONMENT_END = "</environment_details>"
_USER_TURN = ("New instructions for task continuation", "[TASK RESUMPTION]")
"""How the extension opens what the user says when a task goes on: not a tool's result."""


def _texts(content: Any) -> list[str]:
    """A message's text blocks (a string is one)."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]


def _without_environment(text: str) -> str:
    """A text block without the environment details the extension wrote: a block that is
    them, or that ends with them, after its own text; details quoted inside a block (a file
    that mentions the tag) are the block's."""
    if text.lstrip().startswith(_ENVIRONMENT):
        return ""
    if text.rstrip().endswith(_ENVIRONMENT_END):
        at = text.rfind(_ENVIRONMENT)
        return text if at < 0 else text[:at]
    return text


def opens_cline_task(message: Any) -> bool:
    """A Cline history's first message: the user's, holding `<task>` and the extension's
    `<environment_details>` (what a peek of the file sees)."""
    if not isinstance(message, dict) or message.get("role") != "user":
        return False
    text = "\n".join(_texts(message.get("content")))
    return "<task>" in text and _ENVIRONMENT in text


def is_cline_history(value: Any) -> bool:
    """A Cline task history: an array of messages whose first opens the task."""
    return isinstance(value, list) and bool(value) and opens_cline_task(value[0])


def _parameters(body: str) -> tuple[dict[str, str], bool]:
    """A tool element's parameters (each child element's text, in order), and whether every
    one was closed."""
    found: dict[str, str] = {}
    at = 0
    while (opening := _PARAMETER.search(body, at)) is not None:
        name = opening.group(1)
        closing = f"</{name}>"
        end = body.rfind(closing) if name in _LAST_CLOSED else body.find(closing, opening.end())
        if end < opening.end():
            found.setdefault(name, body[opening.end() :].strip())
            return found, False
        found.setdefault(name, body[opening.end() : end].strip())
        at = end + len(closing)
    return found, True


def _element(text: str, name: str, start: int) -> tuple[dict[str, str], int]:
    """The parameters of the tool element whose body starts at `start`, and where it ends:
    at the first closing tag of the tool with every parameter closed before it (a file's
    text in `content` may hold the tool's closing tag), else the first, else the text's end."""
    closing = f"</{name}>"
    first: tuple[dict[str, str], int] | None = None
    at = text.find(closing, start)
    while at >= 0:
        found, whole = _parameters(text[start:at])
        if whole:
            return found, at + len(closing)
        first = first or (found, at + len(closing))
        at = text.find(closing, at + 1)
    if first is not None:
        return first
    return _parameters(text[start:])[0], len(text)


def _calls(text: str, tools: frozenset[str]) -> tuple[str, list[tuple[str, dict[str, str]]]]:
    """The tool elements of an assistant message's text, in order, and the text around them.
    A tool's element opens a line, as the system prompt asks; only where none does is an
    element inside a line taken (a tool named in prose, "use the <read_file> tool", is none)."""
    names = "|".join(sorted(tools))
    text = _INTERRUPTED.sub("", text)  # Cline's note where it cut a reply after its first tool
    opening = re.compile(r"(?m)^[ \t]*<(" + names + r")>")
    if opening.search(text) is None:
        opening = re.compile(r"<(" + names + r")>")
    calls: list[tuple[str, dict[str, str]]] = []
    kept: list[str] = []
    at = 0
    while (found := opening.search(text, at)) is not None:
        name = found.group(1)
        arguments, end = _element(text, name, found.end())
        kept.append(text[at : found.start()])
        calls.append((name, arguments))
        at = end
    kept.append(text[at:])
    thought = _THINKING.sub("", "".join(kept)).strip()
    return thought, calls


def _failed(name: str, text: str) -> bool:
    if text.lstrip().startswith(_FAILED) or _NOT_EXECUTED.match(text) is not None:
        return True
    code = _EXIT_CODE.search(text) if name == "execute_command" else None
    return code is not None and int(code.group(1)) != 0


def _results(texts: list[str]) -> list[tuple[str, str]]:
    """The tool results a user message gives back, in order: each the tool it names and its
    text (the header's own text after "Result:", then the blocks up to the next header)."""
    results: list[tuple[str, list[str]]] = []
    closed = False  # the user spoke after the results: the rest is theirs
    for text in texts:
        text = _without_environment(text).strip()
        header = _HEADER.match(text)
        refused = _NOT_EXECUTED.match(text)
        if header is not None:
            said = text[header.end() :].strip()
            results.append((header.group(1), [said] if said else []))
            closed = False
        elif refused is not None:
            results.append((refused.group(1), [text]))
            closed = False
        elif text.startswith(_USER_TURN):
            closed = True
        elif results and text and not closed:
            results[-1][1].append(text)
    return [(name, "\n".join(parts)) for name, parts in results]


def _turns(messages: list[Any], tools: frozenset[str]) -> tuple[list[dict[str, Any]], str | None]:
    """The turns after the task as OpenAI messages, and the model Roo Code names."""
    out: list[dict[str, Any]] = []
    waiting: list[tuple[str, str]] = []  # (id, tool) of the calls still to be answered
    model: str | None = None
    for number, message in enumerate(messages[1:], start=1):
        if not isinstance(message, dict):
            out.append({"role": "assistant", "content": message})  # the mapping says why
            continue
        content = message.get("content")
        native = isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result") for b in content
        )
        if message.get("role") == "assistant" and not native:
            thought, calls = _calls("\n".join(_texts(content)), tools)
            ids = [f"call-{number}-{index}" for index in range(len(calls))]
            turn: dict[str, Any] = {"role": "assistant", "content": thought or None}
            if calls:
                turn["tool_calls"] = [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    }
                    for call_id, (name, arguments) in zip(ids, calls, strict=True)
                ]
            out.append(turn)
            waiting = [(call_id, name) for call_id, (name, _) in zip(ids, calls, strict=True)]
        elif message.get("role") == "user":
            texts = _texts(content)
            if model is None:
                model = next((m.group(1) for t in texts if (m := _MODEL.search(t))), None)
            if native and isinstance(content, list):
                kept = [b for b in content if not _is_environment(b)]
                out.append({**message, "content": kept})
                continue
            for name, said in _results(texts):
                at = next((i for i, (_, tool) in enumerate(waiting) if tool == name), None)
                if at is None:
                    continue  # a subtask's completion, or a result no call awaits: no step
                call_id, _ = waiting.pop(at)
                answer: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": said}
                if _failed(name, said):
                    answer["is_error"] = True
                out.append(answer)
        else:
            out.append(message)
    return out, model


def _is_environment(block: Any) -> bool:
    return (
        isinstance(block, dict)
        and block.get("type") == "text"
        and str(block.get("text", "")).lstrip().startswith(_ENVIRONMENT)
    )


def _objective(message: dict[str, Any]) -> str | None:
    texts = _texts(message.get("content"))
    task = next((m.group(1) for t in texts if (m := _TASK.search(t))), None)
    if task is not None:
        return task
    kept = [_without_environment(t).strip() for t in texts]
    return "\n".join(t for t in kept if t) or None


def _named_tools(messages: list[Any]) -> frozenset[str]:
    """The tools the results of this history name, beside the known ones."""
    named = {
        found.group(1)
        for message in messages
        if isinstance(message, dict) and message.get("role") == "user"
        for text in _texts(message.get("content"))
        if (found := _HEADER.match(text.lstrip())) is not None
    }
    return KNOWN_TOOLS | named


def cline_record(value: Any, task_id: str | None = None) -> Any:
    """The chat record of one task history (`task_id`: its folder's name, where the file lies
    in Cline's layout); anything else is handed on as it is, for the mapping to reject with
    its reason."""
    if not is_cline_history(value):
        return value
    turns, model = _turns(value, _named_tools(value))
    objective = _objective(value[0])
    started = epoch_text(value[0].get("ts"), 1000) or _NO_TIME
    if task_id is None:
        content = json.dumps(value, sort_keys=True, ensure_ascii=False)
        task_id = hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
    record: dict[str, Any] = {
        "messages": [{"role": "user", "content": objective}, *turns],
        "task": task_id,
        "started": started,
    }
    if model is not None:
        record["model"] = model
    return record
