"""How this folder was made: a LangGraph ReAct agent (langgraph 1.2.24, langchain-openai 1.8.1)
traced to LangSmith by LangChain's own tracer (`LANGSMITH_TRACING=true`, langsmith 0.15.1),
three runs (tagged `weather` and `capture`), the third failing on a tool's exception; then the runs read back with
`Client.list_runs` and written as a user exports them: `runs.json`, `[run.dict() for run in
runs]` dumped with `default=str`, and `runs.jsonl`, one run a line. Then the same agent without
LangChain (`@traceable` functions, the OpenAI client wrapped by `wrap_openai`), its runs in a
project of their own, exported the same way to `traceable.json`.

No LangSmith server is reached: a stand-in on 127.0.0.1 takes the SDK's multipart uploads,
keeps each run as the SDK sent it (its create and its update merged, as LangSmith stores
them), and answers the run query with them, adding what LangSmith adds (the project's
`session_id`, `status` "error" or "success"). So `inputs`, `outputs`, `error`, `extra`, ids and
times are the SDK's own; the fields LangSmith computes (token counts, costs, feedback) are
the SDK's defaults. The fake model: `../otlp_capture.py`. Run with no network and the packages
above installed: `python capture.py OUT_FOLDER`.
"""

from __future__ import annotations

import email.parser
import json
import os
import sys
import threading
import time
import uuid
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from otlp_capture import (  # noqa: E402
    MODEL_URL,
    QUESTIONS,
    JsonServer,
    langgraph_agent,
    openai_answer,
    serve_model,
    weather,
)

PROJECTS = {
    name: {
        "id": str(uuid.UUID(int=number)),
        "name": name,
        "tenant_id": str(uuid.UUID(int=9)),
        "reference_dataset_id": None,
        "start_time": "2026-12-06T00:00:00+00:00",
    }
    for number, name in enumerate(("weather-agent", "weather-traceable"), 1)
}
"""The two projects: the LangGraph agent's runs, and the `@traceable` agent's."""
INFO = {
    "version": "0.10.0",
    "batch_ingest_config": {
        "use_multipart_endpoint": True,
        "scale_up_qsize_trigger": 1000,
        "scale_up_nthreads_limit": 16,
        "scale_down_nempty_trigger": 4,
        "size_limit": 100,
        "size_limit_bytes": 20_971_520,
    },
}
RUNS: dict[str, dict[str, Any]] = {}


def _keep(run: dict[str, Any]) -> None:
    """A run's create or update, merged into what is kept of it (a null never overwrites)."""
    kept = RUNS.setdefault(run["id"], {})
    for key, value in run.items():
        if value is not None or key not in kept:
            kept[key] = value


def _multipart(content_type: str, body: bytes) -> None:
    """The SDK's multipart upload: a part `post.ID` or `patch.ID` per run, and its `inputs`,
    `outputs`, `events`, ... as parts `post.ID.inputs` and so on."""
    head = f"Content-Type: {content_type}\r\n\r\n".encode()
    parts = {}
    for part in email.parser.BytesParser().parsebytes(head + body).get_payload():
        name = part.get_param("name", header="content-disposition")
        parts[name] = json.loads(part.get_payload(decode=True))
    for name, value in parts.items():
        if name.count(".") == 1:
            run = {**value, "id": name.split(".")[1]}
            run.update(
                {k.rsplit(".", 1)[1]: v for k, v in parts.items() if k.startswith(name + ".")}
            )
            _keep(run)


class _LangSmith(JsonServer):
    def do_GET(self) -> None:
        url = urlparse(self.path)
        if url.path.endswith("/info"):
            return self.answer(INFO)
        self.answer([PROJECTS[name] for name in parse_qs(url.query).get("name", [])])

    def do_POST(self) -> None:
        path = urlparse(self.path).path
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if path.endswith("/runs/multipart"):
            _multipart(self.headers["Content-Type"], body)
        elif path.endswith("/runs/batch"):
            for run in [*json.loads(body).get("post", []), *json.loads(body).get("patch", [])]:
                _keep(run)
        if not path.endswith("/runs/query"):
            return self.answer({})
        wanted = json.loads(body).get("session") or []
        runs = [
            {
                **run,
                "session_id": PROJECTS[run["session_name"]]["id"],
                "status": "error" if run.get("error") else "success",
            }
            for run in sorted(RUNS.values(), key=lambda run: run.get("dotted_order") or "")
            if PROJECTS[run["session_name"]]["id"] in wanted
        ]
        self.answer({"runs": runs, "cursors": {"next": None}})


def _run_agent() -> None:
    from langchain_core.tracers.langchain import wait_for_all_tracers

    agent = langgraph_agent()
    for question in QUESTIONS:
        try:
            agent.invoke(
                {"messages": [{"role": "user", "content": question}]},
                config={"tags": ["weather", "capture"]},
            )
        except ValueError as exc:
            print("run failed:", exc)
    wait_for_all_tracers()


def _run_traceable() -> None:
    """The same agent without LangChain: `@traceable` functions and the OpenAI client wrapped
    by `wrap_openai`, as LangSmith's own quick start traces a plain OpenAI agent."""
    from langsmith import traceable, tracing_context
    from langsmith.wrappers import wrap_openai
    from openai import OpenAI

    client = wrap_openai(OpenAI(base_url=MODEL_URL, api_key="not-a-key"))

    @traceable(run_type="tool", name="get_weather")
    def get_weather(city: str) -> str:
        return weather(city)

    @traceable(name="weather_agent", tags=["weather", "capture"])
    def agent(question: str) -> str:
        return openai_answer(client, question, get_weather)

    with tracing_context(project_name="weather-traceable"):
        for question in QUESTIONS:
            try:
                agent(question)
            except ValueError as exc:
                print("run failed:", exc)


def _export(out: str, project: str, stem: str) -> None:
    from langsmith import Client

    runs = [run.dict() for run in Client().list_runs(project_name=project)]
    with open(os.path.join(out, f"{stem}.json"), "w") as whole:
        json.dump(runs, whole, default=str)
    if stem == "runs":
        with open(os.path.join(out, f"{stem}.jsonl"), "w") as lines:
            lines.writelines(json.dumps(run, default=str) + "\n" for run in runs)
    print(project, len(runs), "runs")


def main(out: str) -> None:
    serve_model()
    server = ThreadingHTTPServer(("127.0.0.1", 14319), _LangSmith)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    os.environ.update(
        LANGSMITH_TRACING="true",
        LANGSMITH_ENDPOINT="http://127.0.0.1:14319",
        LANGSMITH_API_KEY="not-a-key",
        LANGSMITH_PROJECT="weather-agent",
    )
    _run_agent()
    _run_traceable()
    from langsmith import Client

    Client().flush()
    time.sleep(1)
    _export(out, "weather-agent", "runs")
    _export(out, "weather-traceable", "traceable")


if __name__ == "__main__":
    main(sys.argv[1])
