"""How this folder was made: the weather agent twice, traced to Opik (opik 2.2.122, openai
2.54.0): as plain functions, Opik's quick start (`@opik.track` on the agent and its tool, the
OpenAI client wrapped by `track_openai`; project `weather-agent`), and as LangGraph's ReAct agent
(langgraph 1.2.24, langchain-openai 1.8.1) traced by Opik's LangGraph guide (an `OpikTracer`
given the graph, passed as a callback; project `weather-langgraph`); three runs each (tagged
`weather` and `capture`), the third failing on a tool's exception. Then each project exported
with Opik's own CLI, `opik export default PROJECT traces --path OUT`, which writes a file a
trace (`OUT/default/projects/<project id>/trace_<id>.json`: the trace and its spans); those
files are kept as written, in `track/` and `langgraph/`. And the first project's spans read
back with the SDK's `search_spans`, written as `[span.dict() for span in spans]` to
`search_spans.json`.

No Opik server is reached: a stand-in on 127.0.0.1 takes the SDK's batches of traces and
spans (gzip'd JSON), keeps each as the SDK sent it (a later update merged in), and answers the
CLI's and the SDK's queries with them, adding the project's id. So `input`, `output`,
`metadata`, `error_info`, `tags`, ids and times are the SDK's own; the fields Opik's server
computes (usage totals, costs, durations, span counts, feedback scores) are absent. The fake
model: `../otlp_capture.py`. Run with no network and the packages above installed:
`python capture.py OUT_FOLDER`.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
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

URL = "http://127.0.0.1:15173/api"
PROJECTS = {
    name: {"id": str(uuid.UUID(int=number)), "name": name, "visibility": "private"}
    for number, name in enumerate(("weather-agent", "weather-langgraph"), 1)
}
"""The two projects: the `@opik.track` agent's traces, and the LangGraph agent's."""
KEPT: dict[str, dict[str, dict[str, Any]]] = {"traces": {}, "spans": {}}
REQUESTS: list[str] = []


def _keep(kind: str, item: dict[str, Any]) -> None:
    """A trace's or span's create or update, merged into what is kept of it."""
    kept = KEPT[kind].setdefault(item["id"], {})
    for key, value in item.items():
        if value is not None or key not in kept:
            kept[key] = value


class _Opik(JsonServer):
    def _body(self) -> Any:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if body[:2] == b"\x1f\x8b":
            body = gzip.decompress(body)
        return json.loads(body) if body else None

    def _search(self, kind: str, query: dict[str, Any]) -> None:
        """A page of the SDK's search (`search_spans`, `search_traces`): JSON lines, newest
        first, those older than `last_retrieved_id`."""
        items = _listed(kind, query["project_name"])
        after = query.get("last_retrieved_id")
        items = [item for item in items if after is None or item["id"] < after]
        out = b"".join(json.dumps(item).encode() + b"\n" for item in items[: query["limit"]])
        self.answer(out, "application/octet-stream")

    def do_POST(self) -> None:
        path = urlparse(self.path).path
        REQUESTS.append(f"POST {path}")
        body = self._body()
        for kind in KEPT:
            if path.endswith(f"/{kind}/batch"):
                for item in body[kind]:
                    _keep(kind, item)
            if path.endswith(f"/{kind}/search"):
                return self._search(kind, body)
        if path.endswith("/projects/retrieve"):
            return self.answer(PROJECTS[body["name"]])
        self.answer({})

    def do_PATCH(self) -> None:
        path = urlparse(self.path).path
        REQUESTS.append(f"PATCH {path}")
        kind, item_id = path.rstrip("/").split("/")[-2:]
        _keep(kind, {**self._body(), "id": item_id})
        self.answer({})

    def do_GET(self) -> None:
        url = urlparse(self.path)
        REQUESTS.append(f"GET {url.path}")
        query = parse_qs(url.query)
        kind = url.path.rstrip("/").split("/")[-1]
        if kind in KEPT:
            items = _listed(kind, query["project_name"][0])
            page, size = int(query.get("page", ["1"])[0]), int(query.get("size", ["100"])[0])
            content = items[(page - 1) * size : page * size]
            return self.answer(
                {"page": page, "size": len(content), "total": len(items), "content": content}
            )
        self.answer({})


def _listed(kind: str, project: str) -> list[dict[str, Any]]:
    """A project's traces or spans as Opik lists them: newest first (ids are UUIDv7), with the
    project's id."""
    return sorted(
        (
            {**item, "project_id": PROJECTS[project]["id"]}
            for item in KEPT[kind].values()
            if item.get("project_name") == project
        ),
        key=lambda item: item["id"],
        reverse=True,
    )


def _run_agent() -> None:
    import opik
    from openai import OpenAI
    from opik.integrations.openai import track_openai

    client = track_openai(OpenAI(base_url=MODEL_URL, api_key="not-a-key"))

    @opik.track(type="tool", name="get_weather")
    def get_weather(city: str) -> str:
        return weather(city)

    @opik.track(name="weather_agent", tags=["weather", "capture"])
    def agent(question: str) -> str:
        return openai_answer(client, question, get_weather)

    for question in QUESTIONS:
        try:
            agent(question)
        except ValueError as exc:
            print("run failed:", exc)
    opik.flush_tracker()


def _run_langgraph() -> None:
    """LangGraph's ReAct agent traced by Opik's LangChain integration, as its LangGraph guide
    sets it up: an `OpikTracer` given the graph, passed as a callback."""
    from opik.integrations.langchain import OpikTracer

    agent = langgraph_agent()
    tracer = OpikTracer(
        graph=agent.get_graph(xray=True),
        project_name="weather-langgraph",
        tags=["weather", "capture"],
    )
    for question in QUESTIONS:
        try:
            agent.invoke(
                {"messages": [{"role": "user", "content": question}]},
                config={"callbacks": [tracer]},
            )
        except ValueError as exc:
            print("run failed:", exc)
    tracer.flush()


def _export(out: str) -> None:
    """Each project as Opik's CLI exports it, and the first project's spans as the SDK's
    `search_spans` gives them, one array (`[span.dict() for span in ...]`, as Opik's export
    guide converts them, dumped with `default=str`)."""
    import opik

    for project in PROJECTS:
        subprocess.run(
            ["opik", "export", "default", project, "traces", "--path", out],
            check=True,
        )
    spans = opik.Opik().search_spans(project_name="weather-agent", max_results=1000)
    with open(os.path.join(out, "search_spans.json"), "w") as file:
        json.dump([span.dict() for span in spans], file, default=str)


def main(out: str) -> None:
    serve_model()
    server = ThreadingHTTPServer(("127.0.0.1", 15173), _Opik)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    os.environ.update(
        OPIK_URL_OVERRIDE=URL, OPIK_WORKSPACE="default", OPIK_PROJECT_NAME="weather-agent"
    )
    _run_agent()
    _run_langgraph()
    time.sleep(1)
    _export(out)
    print(len(KEPT["traces"]), "traces,", len(KEPT["spans"]), "spans;", sorted(set(REQUESTS)))


if __name__ == "__main__":
    main(sys.argv[1])
