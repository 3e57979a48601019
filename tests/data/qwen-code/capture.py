"""How this folder was made: Alibaba's Qwen Code (`npm install @qwen-code/qwen-code@0.15.10`,
Node 20) run three times in a folder holding `notes.txt` ("Paris: 18 C, cloudy") and
`weather.txt` ("Tokyo: 24 C, sunny"), non-interactively (`qwen -p PROMPT --yolo`), each run a
session that the CLI records as `$HOME/.qwen/projects/<project>/chats/<session id>.jsonl`; the
session files are kept as the CLI wrote them.

No model provider is reached: `OPENAI_BASE_URL` points the CLI at a stand-in OpenAI chat API on
127.0.0.1 (streamed answers) that asks for `read_file` on each file the prompt names, then
answers with what the calls returned. The settings choose the OpenAI login (the key is
`not-a-key`) and turn telemetry off. Run with no network: `python capture.py PATH_TO_QWEN
OUT_FOLDER`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from otlp_capture import FILE_PROMPTS, FILES  # noqa: E402

SETTINGS = {
    "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
    "general": {"disableAutoUpdate": True},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}
WORK = Path(tempfile.gettempdir(), "qwen-capture-work")
"""The folder the CLI runs in (the file paths it reads are there)."""


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _reply(body: dict[str, Any]) -> dict[str, Any]:
    """The model's message: calls of `read_file` for the files the prompt names; once they
    are answered, a text with what they returned."""
    messages = body.get("messages") or [{}]
    answered = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        answered.insert(0, _text(message.get("content")).strip())
    if answered:
        return {"content": "Here is what I found: " + " ".join(answered)}
    prompt = _text(messages[-1].get("content"))
    named = [name for name in ("notes.txt", "weather.txt", "missing.txt") if name in prompt]
    if not named:
        return {"content": "Hello."}
    calls = [
        {
            "index": number,
            "id": f"call_{number}_{name.split('.')[0]}",
            "type": "function",
            "function": {
                "name": "read_file",
                "arguments": json.dumps({"file_path": str(WORK / name)}),
            },
        }
        for number, name in enumerate(named)
    ]
    return {"tool_calls": calls}


class _OpenAI(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        said = _reply(body)
        head = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
        }
        head["model"] = "qwen3-coder-plus"
        done = "tool_calls" if "tool_calls" in said else "stop"
        chunks = [
            {**head, "choices": [{"index": 0, "delta": {"role": "assistant", **said}}]},
            {
                **head,
                "choices": [{"index": 0, "delta": {}, "finish_reason": done}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
            },
        ]
        out = ("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def main(qwen: str, out: str) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 18091), _OpenAI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir()
    for name, text in FILES.items():
        (WORK / name).write_text(text)
    with tempfile.TemporaryDirectory() as home:
        (Path(home) / ".qwen").mkdir()
        (Path(home) / ".qwen" / "settings.json").write_text(json.dumps(SETTINGS))
        env = {
            **os.environ,
            "HOME": home,
            "OPENAI_API_KEY": "not-a-key",
            "OPENAI_BASE_URL": "http://127.0.0.1:18091/v1",
            "OPENAI_MODEL": "qwen3-coder-plus",
        }
        for prompt in FILE_PROMPTS:
            command = [qwen, "-p", prompt, "--yolo"]
            subprocess.run(command, cwd=WORK, env=env, stdin=subprocess.DEVNULL, check=False)
        Path(out).mkdir(parents=True, exist_ok=True)
        for found in Path(home, ".qwen", "projects").glob("*/chats/*.jsonl"):
            shutil.copy(found, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
