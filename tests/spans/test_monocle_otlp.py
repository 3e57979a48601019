"""Monocle 0.8's spans, as its own file exporter writes them and as its `otlp` exporter sends
them (tests/data/monocle-0.8, made by its capture.py: a LangGraph ReAct agent's three runs, the
third failing on a tool's exception, written by both exporters at once). Each form scores with
no flag to the same three traces: the question as the objective (monocle_apptrace 0.8 writes the
agent's input as the text of a JSON list, `["What is the weather in Paris?"]`), the answer, the
get_weather calls with their results, the failed call with the exception's message (Monocle's
file says the status's message as `message`, the SDK's `to_json()` as `description`), and the
agent. Over OTLP the inputs and outputs are span events, which only the full parser reads: the
spans were read without them, and every trace was quarantined."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "monocle-0.8"

_TRACES = (
    "SELECT objective, result_summary, agent_id, success, "
    "list_transform(list_filter(steps, s -> s.type = 'tool_call'), "
    "  s -> [s.tool_name, s.input, s.output_summary]) FROM traces ORDER BY objective"
)

PARIS = "Paris: 18 C, cloudy"
TOKYO = "Tokyo: 24 C, sunny"
EXPECTED = [
    (
        "Compare the weather in Tokyo and Paris.",
        f"Here is what I found: {PARIS} {TOKYO}",
        "weather_agent",
        True,
        [
            ["get_weather", "{'city': 'Paris'}", PARIS],
            ["get_weather", "{'city': 'Tokyo'}", TOKYO],
        ],
    ),
    (
        "Is it raining in Lima?",
        "",  # the run raised: no answer, and its root span's status is ERROR
        "weather_agent",
        False,
        [
            [
                "get_weather",
                "{'city': 'Lima'}",
                '{"error":"weather service unavailable for Lima"}',
            ]
        ],
    ),
    (
        "What is the weather in Paris?",
        f"Here is what I found: {PARIS}",
        "weather_agent",
        True,
        [["get_weather", "{'city': 'Paris'}", PARIS]],
    ),
]


@pytest.mark.parametrize("form", ["files", "otlp.json", "otlp.pb"])
def test_monocle_spans_read_the_same_from_its_files_and_over_otlp(
    form: str, tmp_path: Path
) -> None:
    source = DATA / form
    copied = tmp_path / form
    if source.is_dir():
        shutil.copytree(source, copied)
    else:
        shutil.copyfile(source, copied)
    db = tmp_path / "t.duckdb"
    assert main(["score", str(copied), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, _TRACES) == EXPECTED
    assert query_rows(db, "SELECT count(*) FROM quarantine") == [(0,)]
