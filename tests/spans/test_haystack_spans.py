"""Haystack's own spans (tests/data/haystack, made by its capture.py: an Agent with one tool
asked three questions, the third's tool raising, the Agent handing the error back to the model;
then a pipeline of a prompt builder and the chat generator) score with no flag, from a
Collector's file (OTLP JSON lines and protobuf) and from the SDK's console exporter alike:
Haystack's run span gives the task and the answer, its model call spans the replies, its tool
call spans the tool, arguments and result; a pipeline's chat generator is a model call, its
first user message the task. Haystack names none of these with the GenAI or OpenInference keys:
every trace was quarantined `empty_trajectory`."""

from __future__ import annotations

from pathlib import Path

import pytest
from captured import PARIS, TOKYO, scored

DATA = Path(__file__).resolve().parents[1] / "data" / "haystack"

FAILED = (
    "Failed to invoke Tool `get_weather` with parameters {'city': 'Lima'}. "
    "Error: weather service unavailable for Lima"
)
EXPECTED = [
    (  # the pipeline: the prompt the builder rendered is what the model was asked
        "Answer briefly: What is a weather front?",
        [],
        "A front is where two air masses meet.",
    ),
    (
        "Compare the weather in Tokyo and Paris.",
        [
            ["get_weather", '{"city": "Paris"}', PARIS],
            ["get_weather", '{"city": "Tokyo"}', TOKYO],
        ],
        f"Here is what I found: {PARIS} {TOKYO}",
    ),
    (
        "Is it raining in Lima?",
        # Haystack's output of a failed call: `{"error": ...}`, which reads as a failure
        [["get_weather", '{"city": "Lima"}', f'{{"error": "{FAILED}"}}']],
        f"Here is what I found: {FAILED}",
    ),
    (
        "What is the weather in Paris?",
        [["get_weather", '{"city": "Paris"}', PARIS]],
        f"Here is what I found: {PARIS}",
    ),
]


@pytest.mark.parametrize("form", ["otlp.json", "otlp.pb", "console.json"])
def test_haystack_spans_score_from_each_exporter(form: str, tmp_path: Path) -> None:
    # no outcome is recorded (status UNSET): unknown; the agent is the service's name
    expected = [
        (objective, answer, "weather_agent", None, tools, [answer])
        for objective, tools, answer in EXPECTED
    ]
    assert scored(DATA / form, tmp_path) == expected
