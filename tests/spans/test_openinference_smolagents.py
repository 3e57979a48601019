"""A smolagents ToolCallingAgent traced by OpenInference's smolagents instrumentation
(tests/data/openinference-smolagents, made by its capture.py: three questions, at most three
steps each; the third's tool raises each time, and that run ends out of steps with no answer),
as a Collector's file holds it, scores with no flag. The answer given through smolagents'
`final_answer` tool is the answer; a run out of steps, whose output OpenInference writes as
Python's `None`, has none (it read "None" before)."""

from __future__ import annotations

from pathlib import Path

import pytest
from captured import PARIS, TOKYO, scored

DATA = Path(__file__).resolve().parents[1] / "data" / "openinference-smolagents"

SQL = (
    "SELECT objective, result_summary, agent_id, success, "
    "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
    "  s -> [s.type, s.tool_name, s.output_summary]), "
    "list_transform(list_filter(steps, s -> s.type = 'thought'), s -> s.content) "
    "FROM traces ORDER BY objective"
)
"""Every call, a retry of a failed one included: (kind, tool, result)."""
FAILED = '{"error":"ValueError: weather service unavailable for Lima"}'


def _answered(answer: str, results: list[str]) -> list[list[str]]:
    calls = [["tool_call", "get_weather", result] for result in results]
    return [*calls, ["tool_call", "final_answer", answer]]


EXPECTED = [
    (
        "Compare the weather in Tokyo and Paris.",
        f"Here is what I found: {PARIS}\n{TOKYO}",
        # smolagents ran the two calls at once, on threads: they are in the order they started,
        # Tokyo's first in this file (the model asked for Paris first)
        _answered(f"Here is what I found: {PARIS}\n{TOKYO}", [TOKYO, PARIS]),
    ),
    (
        "Is it raining in Lima?",
        "",  # out of steps: no answer (a blank answer caps the trace's level)
        [["tool_call", "get_weather", FAILED], *[["error_recovery", "get_weather", FAILED]] * 2],
    ),
    (
        "What is the weather in Paris?",
        f"Here is what I found: {PARIS}",
        _answered(f"Here is what I found: {PARIS}", [PARIS]),
    ),
]


@pytest.mark.parametrize("form", ["otlp.json", "otlp.pb"])
def test_smolagents_traced_by_openinference_reads_its_answer(form: str, tmp_path: Path) -> None:
    # the model calls' replies only ask for tools: no thought; the run's status is OK
    expected = [
        (task, answer, "weather_agent", True, calls, []) for task, answer, calls in EXPECTED
    ]
    assert scored(DATA / form, tmp_path, SQL) == expected


@pytest.mark.parametrize("form", ["otlp.json", "otlp.pb"])
def test_a_run_that_plans_first_has_its_task_as_objective(form: str, tmp_path: Path) -> None:
    """With a planning step (tests/data/openinference-smolagents-planning), the first model
    call's user message is smolagents' planning prompt, which quotes the task: the objective is
    the task the run was given (its span's input `{"task": ...}`), not that prompt."""
    planning = DATA.parent / "openinference-smolagents-planning" / form
    (row,) = scored(planning, tmp_path, SQL)
    task, answer, calls = EXPECTED[2]
    assert row[:5] == (task, answer, "weather_agent", True, calls)
