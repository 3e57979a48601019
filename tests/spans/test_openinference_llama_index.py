"""A LlamaIndex FunctionAgent traced by OpenInference's LlamaIndex instrumentation
(tests/data/openinference-llama-index, made by its capture.py: three runs, the third's tool
raising, the agent handing the error back to the model), as a Collector's file holds it, scores
with no flag. Before, each trace's objective was the workflow's start state as JSON (the first
span typed LLM, `_prepare_chat_with_tools`, holds no messages, so no model call gave the task),
its answer the `repr` of the workflow's stop event, cut short, and each tool result its
`ToolOutput`'s JSON."""

from __future__ import annotations

from pathlib import Path

import pytest
from captured import PARIS, TOKYO, scored

DATA = Path(__file__).resolve().parents[1] / "data" / "openinference-llama-index"


def _trace(question: str, cities: list[str], results: list[str], answer: str) -> tuple:
    # OpenInference writes a FunctionTool's arguments as {"kwargs": {...}}
    calls = [
        ["get_weather", f'{{"kwargs": {{"city": "{city}"}}}}', result]
        for city, result in zip(cities, results, strict=True)
    ]
    return (question, answer, "weather_agent", True, calls, [answer])


FAILED = "weather service unavailable for Lima"
EXPECTED = [
    _trace(
        "Compare the weather in Tokyo and Paris.",
        ["Paris", "Tokyo"],
        [PARIS, TOKYO],
        f"Here is what I found: {PARIS} {TOKYO}",
    ),
    _trace(
        "Is it raining in Lima?",
        ["Lima"],
        [f'{{"error":"ValueError: {FAILED}"}}'],  # the tool span's status: ERROR
        f"Here is what I found: {FAILED}",
    ),
    _trace("What is the weather in Paris?", ["Paris"], [PARIS], f"Here is what I found: {PARIS}"),
]


@pytest.mark.parametrize("form", ["otlp.json", "otlp.pb"])
def test_llama_index_traced_by_openinference_reads_task_answer_and_results(
    form: str, tmp_path: Path
) -> None:
    assert scored(DATA / form, tmp_path) == EXPECTED
