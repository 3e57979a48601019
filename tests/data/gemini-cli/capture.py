"""How this folder was made: Google's Gemini CLI (`npm install @google/gemini-cli@VERSION`:
0.61.0, and 0.20.0 for the older one-document files; Node 20) run three times in a folder
holding `notes.txt` ("Paris: 18 C, cloudy") and `weather.txt` ("Tokyo: 24 C, sunny"), non-
interactively (`gemini -p PROMPT --yolo -m gemini-2.5-flash`), each run a session that the CLI
records under `$HOME/.gemini/tmp/<project>/chats/`; the session files are kept as the CLI wrote
them, in `0.61.0/` and `0.20.0/`.

No Google server is reached: `GOOGLE_GEMINI_BASE_URL` points the CLI at a stand-in Gemini API on
127.0.0.1 (`streamGenerateContent` answered as server-sent events) that asks for `read_file` on
each file the prompt names, then answers with what the calls returned. The settings choose the
API-key login (the key is `not-a-key`), trust the folder and turn telemetry off. Run with no
network: `python capture.py PATH_TO_GEMINI OUT_FOLDER`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from otlp_capture import FILE_PROMPTS, FILES  # noqa: E402

SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "selectedAuthType": "gemini-api-key",
    "general": {"disableAutoUpdate": True},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}


def _reply(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The model's parts: calls of `read_file` for the files the prompt names; once they are
    answered, a text with what they returned (or why they failed)."""
    contents = body.get("contents") or [{}]
    parts = contents[-1].get("parts", [])
    answers = [p["functionResponse"]["response"] for p in parts if "functionResponse" in p]
    if answers:
        said = [
            a["output"].strip() if "output" in a else f"could not read it ({a.get('error')})"
            for a in answers
        ]
        return [{"text": "Here is what I found: " + " ".join(said)}]
    prompt = parts[-1].get("text", "") if parts else ""
    named = [name for name in ("notes.txt", "weather.txt", "missing.txt") if name in prompt]
    if named:
        return [{"functionCall": {"name": "read_file", "args": {"file_path": n}}} for n in named]
    return [{"text": "Hello."}]


class _Gemini(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        usage = {"promptTokenCount": 50, "candidatesTokenCount": 10, "totalTokenCount": 60}
        if ":countTokens" in self.path:
            out, kind = json.dumps({"totalTokens": 50}).encode(), "application/json"
        elif ":streamGenerateContent" in self.path:
            chunk = {
                "candidates": [
                    {"content": {"role": "model", "parts": _reply(body)}, "finishReason": "STOP"}
                ],
                "usageMetadata": usage,
                "modelVersion": "gemini-2.5-flash",
            }
            out, kind = f"data: {json.dumps(chunk)}\r\n\r\n".encode(), "text/event-stream"
        else:  # the CLI's own side questions (routing, next speaker): a JSON answer
            text = json.dumps(
                {"reasoning": "simple", "model_choice": "flash", "next_speaker": "user"}
            )
            answer = {
                "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}}],
                "usageMetadata": usage,
            }
            out, kind = json.dumps(answer).encode(), "application/json"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def main(gemini: str, out: str) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 18090), _Gemini)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as root:
        home, work = Path(root, "home"), Path(root, "work")
        (home / ".gemini").mkdir(parents=True)
        work.mkdir()
        (home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS))
        (home / ".gemini" / "trustedFolders.json").write_text(
            json.dumps({str(work): "TRUST_FOLDER"})
        )
        for name, text in FILES.items():
            (work / name).write_text(text)
        env = {
            **os.environ,
            "HOME": str(home),
            "GEMINI_API_KEY": "not-a-key",
            "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:18090",
        }
        for prompt in FILE_PROMPTS:
            command = [gemini, "-p", prompt, "--yolo", "-m", "gemini-2.5-flash"]
            subprocess.run(command, cwd=work, env=env, stdin=subprocess.DEVNULL, check=False)
        Path(out).mkdir(parents=True, exist_ok=True)
        for found in (home / ".gemini" / "tmp").glob("*/chats/session-*"):
            shutil.copy(found, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
