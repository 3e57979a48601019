"""A CrewAI crew traced by OpenInference's CrewAI instrumentation (tests/data/
openinference-crewai, made by its capture.py: three tasks, the third's tool raising, CrewAI
handing the error back to the model), as a Collector's file holds it, scores with no flag. The
instrumentation traces no model call, and the agent span's input holds the agent's settings:
the task is the crew output's first task description, the answer its `raw`. Before, the
objective was the agent's settings as JSON and the answer the crew output's JSON."""

from __future__ import annotations

from pathlib import Path

import pytest
from captured import PARIS, TOKYO, scored

DATA = Path(__file__).resolve().parents[1] / "data" / "openinference-crewai"

FAILED = "weather service unavailable for Lima"
EXPECTED = [
    (
        "Compare the weather in Tokyo and Paris.",
        f"Here is what I found: {PARIS} {TOKYO}",
        # CrewAI ran the two calls at once: they are in the order they started, Tokyo's first
        # in this file (the model asked for Paris first)
        [
            ["get_weather", '{"city": "Tokyo"}', TOKYO],
            ["get_weather", '{"city": "Paris"}', PARIS],
        ],
    ),
    (
        "Is it raining in Lima?",
        f"Here is what I found: Error executing tool: {FAILED}",
        [["get_weather", '{"city": "Lima"}', f'{{"error":"{FAILED}"}}']],
    ),
    (
        "What is the weather in Paris?",
        f"Here is what I found: {PARIS}",
        [["get_weather", '{"city": "Paris"}', PARIS]],
    ),
]


@pytest.mark.parametrize("form", ["otlp.json", "otlp.pb"])
def test_crewai_traced_by_openinference_reads_its_task_and_answer(
    form: str, tmp_path: Path
) -> None:
    # no model call is traced, so no thought; the agent is the service's name
    expected = [
        (task, answer, "weather_agent", True, calls, []) for task, answer, calls in EXPECTED
    ]
    assert scored(DATA / form, tmp_path) == expected
