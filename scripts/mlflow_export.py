"""Write tests/data/mlflow: the scripted agent (scripts/_scripted_agent.py) traced by MLflow, and
its traces exported as MLflow hands them out.

Run it with the Python of a virtual environment that has MLflow's tracing and the OpenAI client
(they are not the project's dependencies):

    python3 -m venv /tmp/mlf && /tmp/mlf/bin/pip install mlflow-skinny openai
    /tmp/mlf/bin/python scripts/mlflow_export.py --out tests/data/mlflow

MLflow's OpenAI autologging records the model calls (CHAT_MODEL spans), the agent its own AGENT
and TOOL spans (`mlflow.start_span`); a failed tool call records its exception. The traces go
to a local tracking store in a temporary folder and are read back with `mlflow.search_traces`:
`mlflow-traces.json` holds them as one JSON array of `Trace.to_json()` objects (`info` and
`data.spans`), `mlflow-traces.jsonl` one a line; `traces.json` is the invoice trace's span
data as the tracking store keeps it (`{"spans": [...]}`, its artifact).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from _scripted_agent import QUESTIONS, ask, out_folder, serve_model, tool_result


def _run_agent(model_url: str) -> list[Any]:
    import mlflow
    from mlflow.entities import SpanType
    from openai import OpenAI

    mlflow.openai.autolog()
    client = OpenAI(base_url=model_url, api_key="not-a-key")

    def tool(name: str, arguments: dict[str, Any]) -> str:
        with mlflow.start_span(name, span_type=SpanType.TOOL) as span:
            span.set_inputs(arguments)
            succeeded, text = tool_result(name, arguments)
            if not succeeded:
                span.record_exception(KeyError(text.removeprefix("error: ")))
                return text
            span.set_outputs(json.loads(text))
            return text

    for question in QUESTIONS:
        with mlflow.start_span("support-agent", span_type=SpanType.AGENT) as root:
            root.set_inputs({"question": question})
            root.set_outputs(ask(client, question, tool))
    return mlflow.search_traces(return_type="list", order_by=["timestamp_ms ASC"])


def main() -> None:
    out = out_folder(__doc__.splitlines()[0])
    model, model_url = serve_model()
    with tempfile.TemporaryDirectory() as home:
        os.environ["MLFLOW_TRACKING_URI"] = f"file:{home}/mlruns"
        os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
        os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"
        import mlflow

        mlflow.set_experiment("support-agent")
        traces = _run_agent(model_url)
        documents = [json.loads(trace.to_json()) for trace in traces]
        (out / "mlflow-traces.json").write_text(json.dumps(documents, indent=2) + "\n")
        lines = "".join(json.dumps(document) + "\n" for document in documents)
        (out / "mlflow-traces.jsonl").write_text(lines)
        invoice = documents[QUESTIONS.index("When was invoice INV-404 paid?")]["info"]
        (stored,) = Path(home).glob(f"mlruns/*/traces/{invoice['trace_id']}/artifacts/traces.json")
        shutil.copyfile(stored, out / "traces.json")
    model.shutdown()


if __name__ == "__main__":
    main()
