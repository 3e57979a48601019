"""How this folder was made: a plain OpenAI function-calling agent traced to W&B Weave as
Weave's quick start traces one (weave 0.54.0: `@weave.op` on the agent and on its tool, the
OpenAI client patched by Weave's own integration; openai 3.63.0), three runs, the third
failing on a tool's exception; then the calls read back as Weave's export guide reads them:
`calls.json`, the SDK's `client.get_calls()` as `[call.to_dict() for call in calls]` dumped
with `default=str`, and `calls.jsonl`, the service API's `calls/stream_query` answer (one call
a line) as the SDK's `calls_query_stream` models it. Then the same agent, its ops given their
kinds (`kind="agent"`, `kind="tool"`), in a project of its own, exported to `kinds.json`.

No W&B server is reached: a stand-in on 127.0.0.1 answers W&B's GraphQL (the user, the
project), takes the SDK's ops, files and completed calls (`/v2/ENTITY/PROJECT/calls/complete`),
keeps each call as the SDK sent it and answers `calls/stream_query` with them. So `inputs`,
`output`, `exception`, `attributes`, ids and times are the SDK's own; what Weave's server
computes (`summary`'s usage and costs, `wb_user_id`, storage sizes) is absent. The fake model:
`../otlp_capture.py`. Run with no network and the packages above installed: `python
capture.py OUT_FOLDER`.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from otlp_capture import MODEL_URL, QUESTIONS, JsonServer, openai_answer, serve_model, weather  # noqa: E402

URL = "http://127.0.0.1:15174"
PROJECTS = ("capture/weather-agent", "capture/weather-kinds")
"""The two projects: ops as Weave's quick start writes them (`@weave.op`, no kind), and the
same ops given their kinds (`kind="tool"`, `kind="agent"`)."""
CALLS: dict[str, dict[str, Any]] = {}
VIEWER = {"id": "u1", "username": "capture", "defaultEntity": {"name": "capture"}}
"""The user W&B's GraphQL names; every project the SDK asks for exists."""


def _keep(call: dict[str, Any]) -> None:
    """A call's start, end or whole, merged into what is kept of it."""
    kept = CALLS.setdefault(call["id"], {})
    for key, value in call.items():
        if value is not None or key not in kept:
            kept[key] = value


class _Weave(JsonServer):
    def do_GET(self) -> None:
        if urlparse(self.path).path.endswith("/server_info"):
            return self.answer(
                {"min_required_weave_python_version": "0.0.1", "trace_server_version": "99.0.0"}
            )
        self.answer({})

    def do_POST(self) -> None:
        path = urlparse(self.path).path
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if body[:2] == b"\x1f\x8b":
            body = gzip.decompress(body)
        if path.endswith("/graphql"):
            asked = json.loads(body).get("variables") or {}
            project = {"id": "p1", "name": asked.get("name"), "entityName": "capture"}
            return self.answer({"data": {"viewer": VIEWER, "project": project}})
        if path.endswith(("/obj/create", "/file/create", "/table/create")):
            return self.answer({"digest": "capture", "row_digests": []})
        if path.endswith("/calls/complete"):
            for call in json.loads(body)["batch"]:
                _keep(call)
        elif path.endswith("/call/upsert_batch"):
            for item in json.loads(body)["batch"]:
                _keep(item["req"].get("start") or item["req"].get("end"))
        elif path.endswith("/calls/stream_query"):
            return self._stream(json.loads(body))
        self.answer({})

    def _stream(self, query: dict[str, Any]) -> None:
        """`calls/stream_query`: the project's calls, oldest first, one a line."""
        calls = sorted(
            (call for call in CALLS.values() if call["project_id"] == query["project_id"]),
            key=lambda call: call["started_at"],
        )
        out = b"".join(json.dumps(call).encode() + b"\n" for call in calls)
        self.answer(out, "application/jsonl")


def _run_agent(project: str, kinds: dict[str, Any]) -> Any:
    import weave
    from openai import OpenAI

    client = weave.init(project)
    model = OpenAI(base_url=MODEL_URL, api_key="not-a-key")

    @weave.op(name="get_weather", **kinds.get("tool", {}))
    def get_weather(city: str) -> str:
        return weather(city)

    @weave.op(name="weather_agent", **kinds.get("agent", {}))
    def agent(question: str) -> str:
        return openai_answer(model, question, get_weather)

    for question in QUESTIONS:
        try:
            agent(question)
        except ValueError as exc:
            print("run failed:", exc)
    client.flush()
    return client


def _export(client: Any, out: str, stem: str) -> None:
    calls = [call.to_dict() for call in client.get_calls()]
    with open(os.path.join(out, f"{stem}.json"), "w") as file:
        json.dump(calls, file, default=str)
    if stem == "calls":
        stream = client.server.calls_query_stream({"project_id": PROJECTS[0]})
        with open(os.path.join(out, f"{stem}.jsonl"), "w") as file:
            file.writelines(call.model_dump_json() + "\n" for call in stream)
    print(stem, len(calls), "calls")


def main(out: str) -> None:
    serve_model()
    server = ThreadingHTTPServer(("127.0.0.1", 15174), _Weave)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    os.environ.update(
        WF_TRACE_SERVER_URL=URL,
        WANDB_BASE_URL=URL,
        WANDB_API_KEY="0" * 40,  # the stand-in's: W&B's client wants a key of 40 characters
        WEAVE_PRINT_CALL_LINK="false",
    )
    for project, stem, kinds in (
        (PROJECTS[0], "calls", {}),
        (PROJECTS[1], "kinds", {"tool": {"kind": "tool"}, "agent": {"kind": "agent"}}),
    ):
        client = _run_agent(project, kinds)
        time.sleep(1)
        _export(client, out, stem)


if __name__ == "__main__":
    main(sys.argv[1])
