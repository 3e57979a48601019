"""How this folder was made: a LangGraph ReAct agent (langgraph 1.2.24, langchain-openai 1.8.1)
traced by OpenInference's LangChain instrumentation (openinference-instrumentation-langchain
0.1.80, opentelemetry-sdk 1.45), what Phoenix's LangChain quick start sets up, three runs, the
third failing on a tool's exception.

The fake model, the receiver and the two files written: `../otlp_capture.py`. Run with no
network, the packages above and opentelemetry-exporter-otlp-proto-http installed:
`python capture.py OUT_FOLDER`.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from otlp_capture import QUESTIONS, capture, langgraph_agent, tracer_provider  # noqa: E402


def _run_agent() -> None:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    provider = tracer_provider()
    LangChainInstrumentor().instrument(tracer_provider=provider)
    agent = langgraph_agent()
    for question in QUESTIONS:
        try:
            agent.invoke({"messages": [{"role": "user", "content": question}]})
        except ValueError as exc:
            print("run failed:", exc)
    provider.force_flush()


if __name__ == "__main__":
    capture(sys.argv[1], _run_agent)
