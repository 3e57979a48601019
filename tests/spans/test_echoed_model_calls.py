"""One model call traced twice (a framework's span, and an instrumented client's inside it,
both holding the reply) is one step; two calls that said the same thing one after the other
are two. Spans made by the OpenTelemetry SDK and written as the Collector's file exporter
writes them."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from otel_helpers import CollectorFileExporter, tracer_provider

from pipelines.otel_import import import_otel


def _reply(text: str) -> str:
    return json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}])


def _chat(tracer, text: str):  # type: ignore[no-untyped-def]
    return tracer.start_as_current_span(
        "chat model",
        attributes={"gen_ai.operation.name": "chat", "gen_ai.output.messages": _reply(text)},
    )


def test_a_call_traced_twice_is_one_step_and_calls_one_after_the_other_are_two(
    tmp_path: Path,
) -> None:
    exporter = CollectorFileExporter(tmp_path / "spans.jsonl")
    tracer = tracer_provider(exporter, service="echo-agent").get_tracer("test")
    user = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Ship it?"}]}])
    with tracer.start_as_current_span(
        "invoke_agent echo-agent", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        with tracer.start_as_current_span(
            "chat first",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": user,
                "gen_ai.output.messages": _reply("Checking."),
            },
        ):
            pass
        with _chat(tracer, "Checking."):  # said again, after the first: a step of its own
            pass
        # the framework's span of the last call, and the client's span of it inside
        with _chat(tracer, "Shipped."), _chat(tracer, "Shipped."):
            pass

    summary = import_otel([str(tmp_path)], str(tmp_path / "traces.parquet"))

    assert summary.balanced and summary.spans["echoed_model_call"] == 1
    (trace,) = pl.read_parquet(tmp_path / "traces.parquet").to_dicts()
    assert [(s["type"], s["content"]) for s in trace["steps"]] == [
        ("thought", "Checking."),
        ("thought", "Checking."),
        ("thought", "Shipped."),
    ]
