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

from pathlib import Path

import pytest
from captured import PARIS, TOKYO, scored

DATA = Path(__file__).resolve().parents[1] / "data" / "monocle-0.8"

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
        [f"Here is what I found: {PARIS} {TOKYO}"],
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
        [],  # the model was not asked again
    ),
    (
        "What is the weather in Paris?",
        f"Here is what I found: {PARIS}",
        "weather_agent",
        True,
        [["get_weather", "{'city': 'Paris'}", PARIS]],
        [f"Here is what I found: {PARIS}"],
    ),
]


@pytest.mark.parametrize("form", ["files", "otlp.json", "otlp.pb"])
def test_monocle_spans_read_the_same_from_its_files_and_over_otlp(
    form: str, tmp_path: Path
) -> None:
    assert scored(DATA / form, tmp_path) == EXPECTED
