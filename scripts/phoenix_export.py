"""Write tests/data/phoenix: a small tool-calling agent traced into a real Phoenix server, and
its spans exported the four ways Phoenix hands them out.

Run it with the Python of a virtual environment that has Phoenix and its OpenAI
instrumentation (they are not the project's dependencies: Phoenix pins its own FastAPI):

    python3 -m venv /tmp/phx && /tmp/phx/bin/pip install arize-phoenix openai
    /tmp/phx/bin/python scripts/phoenix_export.py --out tests/data/phoenix

The agent's model is a fake OpenAI server on 127.0.0.1 with scripted replies (nothing leaves
the machine); OpenInference's OpenAI instrumentation records its LLM spans, and the agent
records its own AGENT and TOOL spans. Three questions: one answered directly, one after a tool
call, one after a tool call that fails (status ERROR, an exception event) and a retry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from _scripted_agent import QUESTIONS, ask, out_folder, serve_model, tool_result

PHOENIX = "http://127.0.0.1:6006"
PROJECT = "support-agent"


def _run_agent(model_url: str) -> None:
    from openai import OpenAI
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.trace import Status, StatusCode
    from phoenix.otel import register

    provider = register(
        project_name=PROJECT, endpoint=f"{PHOENIX}/v1/traces", batch=False, verbose=False
    )
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer(PROJECT)
    client = OpenAI(base_url=model_url, api_key="not-a-key")

    def tool(name: str, arguments: dict[str, Any]) -> str:
        with tracer.start_as_current_span(name, openinference_span_kind="tool") as span:
            span.set_tool(name=name, parameters=arguments)
            span.set_input(json.dumps(arguments), mime_type="application/json")
            succeeded, text = tool_result(name, arguments)
            if not succeeded:
                span.set_status(Status(StatusCode.ERROR, text.removeprefix("error: ")))
                span.record_exception(KeyError(arguments.get("invoice_id")))
                return text
            span.set_output(text)
            span.set_status(Status(StatusCode.OK))
            return text

    for question in QUESTIONS:
        with tracer.start_as_current_span(PROJECT, openinference_span_kind="agent") as root:
            root.set_input(question)
            root.set_output(ask(client, question, tool))
            root.set_status(Status(StatusCode.OK))
    provider.force_flush()


def _export(out: Path) -> None:
    from phoenix.client import Client

    client = Client(base_url=PHOENIX)
    frame = client.spans.get_spans_dataframe(project_identifier=PROJECT)
    frame.to_parquet(out / "phoenix-spans-dataframe.parquet")
    frame.to_json(
        out / "phoenix-spans-dataframe.jsonl", orient="records", lines=True, date_format="iso"
    )
    spans = client.spans.get_spans(project_identifier=PROJECT)
    (out / "phoenix-spans.json").write_text(json.dumps(spans, indent=2, default=str) + "\n")
    with urllib.request.urlopen(f"{PHOENIX}/v1/projects/{PROJECT}/spans?limit=1000") as page:
        (out / "phoenix-rest-spans.json").write_bytes(page.read())


def main() -> None:
    out = out_folder(__doc__.splitlines()[0])
    model, model_url = serve_model()
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "PHOENIX_WORKING_DIR": home, "PHOENIX_HOST": "127.0.0.1"}
        phoenix = Path(sys.executable).with_name("phoenix")
        server = subprocess.Popen([str(phoenix), "serve"], env=env, stdout=subprocess.DEVNULL)
        try:
            for _ in range(120):
                try:
                    urllib.request.urlopen(f"{PHOENIX}/healthz").close()
                    break
                except OSError:
                    time.sleep(1)
            _run_agent(model_url)
            time.sleep(2)  # the server writes the spans it was sent
            _export(out)
        finally:
            server.terminate()
            server.wait(30)
    model.shutdown()


if __name__ == "__main__":
    main()
