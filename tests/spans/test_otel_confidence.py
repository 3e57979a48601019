"""Derived confidence of traces from real instrumentation: no level contradicts a failed tool call.

Issue 23 asks that the derived rules, unchanged, give no level that contradicts a failed tool
call the trace records. Here the traces are the OTel import of real runs: the pydantic-ai agent
of otel_helpers under its built-in instrumentation (a clean run; a tool failure retried, not
retried, and one that ends the run) and a tool span under OpenInference's tracer (succeeding,
and raising). A trace records a failed tool call when one of its tool spans has status ERROR.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from conftest import query_rows
from opentelemetry.trace import StatusCode
from otel_helpers import (
    GAVE_UP,
    CollectorFileExporter,
    close_agent_loop,  # noqa: F401 (autouse)
    tracer_provider,
    weather_agent,
)

from pipelines.otel_import import import_otel
from pipelines.score import score_traces

QUESTION = "What is the weather in Paris, in Fahrenheit?"
LEVELS = ("SILENT", "NOTIFY", "CONFIRM", "ESCALATE")
"""Calmest first."""


def _pydantic_ai_run(folder: Path, variant: str) -> CollectorFileExporter:
    exporter = CollectorFileExporter(folder / "spans.jsonl")
    fails = variant != "clean"
    agent = weather_agent(tracer_provider(exporter), fails, variant if fails else "retry")
    if variant == "crash":
        with pytest.raises(RuntimeError, match="converter unavailable"):
            agent.run_sync(QUESTION)
    else:
        answer = agent.run_sync(QUESTION).output
        assert answer == (GAVE_UP if variant == "answer" else "It is 21 C (69.8 F) in Paris.")
    return exporter


def _openinference_run(folder: Path, fails: bool) -> CollectorFileExporter:
    from openinference.instrumentation import OITracer, TraceConfig

    exporter = CollectorFileExporter(folder / "spans.jsonl")
    tracer = OITracer(tracer_provider(exporter, "rates").get_tracer("rates"), config=TraceConfig())
    with tracer.start_as_current_span("rates agent", openinference_span_kind="agent") as root:
        root.set_input("What is one euro in dollars?")
        try:
            with tracer.start_as_current_span("fx", openinference_span_kind="tool") as tool:
                tool.set_tool(
                    name="fx", description="exchange rates", parameters={"pair": "EURUSD"}
                )
                tool.set_input({"pair": "EURUSD"})
                if fails:
                    raise ConnectionError("rates service timed out")
                tool.set_output("1.08")
            root.set_output("One euro is 1.08 dollars.")
        except ConnectionError:
            root.set_output("I could not reach the rates service.")
        root.set_status("OK")
    return exporter


def _records_failed_tool(exporter: CollectorFileExporter) -> bool:
    """Whether a tool span of the run (GenAI `execute_tool`, OpenInference `TOOL`) failed."""
    for span in exporter.spans:
        attributes = span.attributes or {}
        is_tool = (
            attributes.get("gen_ai.operation.name") == "execute_tool"
            or attributes.get("openinference.span.kind") == "TOOL"
        )
        if is_tool and span.status.status_code is StatusCode.ERROR:
            return True
    return False


def test_every_trace_that_records_a_failed_tool_call_is_less_calm_than_every_clean_one(
    tmp_path: Path,
) -> None:
    runs = {}
    for variant in ("clean", "retry", "answer", "crash"):
        folder = tmp_path / f"pydantic-ai-{variant}"
        folder.mkdir()
        runs[folder] = _pydantic_ai_run(folder, variant)
    for fails in (False, True):
        folder = tmp_path / f"openinference-{'fails' if fails else 'ok'}"
        folder.mkdir()
        runs[folder] = _openinference_run(folder, fails)

    failed: dict[str, bool] = {}
    for folder, exporter in runs.items():
        summary = import_otel([str(folder)], str(folder / "traces.parquet"))
        assert (summary.imported, summary.rejected) == (1, {})
        (trace_id,) = pl.read_parquet(folder / "traces.parquet")["id"].to_list()
        failed[trace_id] = _records_failed_tool(exporter)
    assert sorted(failed.values()) == [False, False, True, True, True, True]

    db = tmp_path / "scores.duckdb"
    score_traces([str(folder / "traces.parquet") for folder in runs], db=str(db), no_embedder=True)
    levels = {
        trace_id: (level, penalties)
        for trace_id, level, penalties in query_rows(
            db,
            "SELECT trace_id, level, penalties FROM confidence_traces WHERE source = 'derived'",
        )
    }
    assert levels.keys() == failed.keys()
    # The clean runs are SILENT (one call, OpenInference) and NOTIFY (pydantic-ai).
    least_calm_clean = max(LEVELS.index(levels[t][0]) for t, fails in failed.items() if not fails)
    for trace_id, fails in failed.items():
        level, penalties = levels[trace_id]
        failures = [p for p in penalties if p.startswith("tool_failures")]
        if fails:
            assert failures, (trace_id, level, penalties)
            assert LEVELS.index(level) > least_calm_clean, (trace_id, level, penalties)
        else:
            assert not failures, (trace_id, level, penalties)
