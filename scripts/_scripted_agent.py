"""A scripted tool-calling agent for writing other tools' trace exports (scripts/*_export.py):
the questions, the tools and their results, and a fake OpenAI chat-completions server on
127.0.0.1 whose scripted replies call them. Nothing here leaves the machine.

Three questions: one answered directly, one after a tool call, one after a tool call that
fails (`tool_result` says so) and a retry.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

QUESTIONS = [
    "What is the weather in Lisbon?",
    "When was invoice INV-404 paid?",
    "What is the capital of France?",
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "lookup_invoice",
            "description": "An invoice by id",
            "parameters": {
                "type": "object",
                "properties": {"invoice_id": {"type": "string"}},
                "required": ["invoice_id"],
            },
        },
    },
]


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {"id": call_id, "type": "function", "function": function}


def _reply(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The scripted model: what it answers after the tool results so far."""
    user = next(m["content"] for m in messages if m["role"] == "user")
    results = [m for m in messages if m["role"] == "tool"]
    if "weather" in user:
        if not results:
            call = _call("call_w1", "get_weather", {"city": "Lisbon"})
            return {"role": "assistant", "content": None, "tool_calls": [call]}
        return {"role": "assistant", "content": "It is 21 C and sunny in Lisbon."}
    if "invoice" in user:
        if len(results) < 2:
            invoice = "INV-404" if not results else "INV-0404"
            call = _call(f"call_i{len(results) + 1}", "lookup_invoice", {"invoice_id": invoice})
            text = None if results else "Let me look that invoice up."
            return {"role": "assistant", "content": text, "tool_calls": [call]}
        return {"role": "assistant", "content": "Invoice INV-0404 was paid on 3 March."}
    return {"role": "assistant", "content": "Paris is the capital of France."}


class _FakeOpenAI(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (the handler's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        message = _reply(body["messages"])
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        answer = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def tool_result(name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """What a tool returns: (succeeded, its text). Invoice INV-404 does not exist."""
    if arguments.get("invoice_id") == "INV-404":
        return False, "error: invoice INV-404 not found"
    if name == "get_weather":
        return True, json.dumps({"city": arguments["city"], "celsius": 21, "sky": "sunny"})
    return True, json.dumps({"invoice_id": arguments["invoice_id"], "paid_on": "2026-03-03"})


def serve_model() -> tuple[HTTPServer, str]:
    """The fake OpenAI server, serving on a thread; its base URL for the OpenAI client."""
    server = HTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def ask(client: Any, question: str, call_tool: Callable[[str, dict[str, Any]], str]) -> str:
    """The agent on one question: it calls the model (an OpenAI client) until the model answers
    without a tool call, running each call with `call_tool`; returns the answer."""
    messages: list[Any] = [
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": question},
    ]
    while True:
        completion = client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=TOOLS
        )
        reply = completion.choices[0].message
        messages.append(reply.model_dump(exclude_none=True))
        if not reply.tool_calls:
            return str(reply.content or "")
        for call in reply.tool_calls:
            result = call_tool(call.function.name, json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def out_folder(description: str) -> Path:
    """The folder named by the command line's `--out`, made if missing."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, required=True)
    out: Path = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    return out
