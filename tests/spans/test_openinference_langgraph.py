"""A LangGraph agent traced by OpenInference's LangChain instrumentation (tests/data/
openinference-langgraph, made by its capture.py: three runs, the third failing on a tool's
exception), as a Collector's file holds it, scores with no flag. OpenInference writes a chain's
and a tool's output as LangChain's serialisation (`{"type": "ai", "data": {...}}`, a LangGraph
state's `{"messages": [...]}`): the answer is the state's last model message, a tool's result its
`ToolMessage`'s content. Before, the answer was the whole state's JSON and each result the
`ToolMessage`'s."""

from __future__ import annotations

from pathlib import Path

import pytest
from captured import PARIS, TOKYO, scored

DATA = Path(__file__).resolve().parents[1] / "data" / "openinference-langgraph"

EXPECTED = [
    (
        "Compare the weather in Tokyo and Paris.",
        f"Here is what I found: {PARIS} {TOKYO}",
        "weather_agent",
        True,
        # OpenInference records a one-argument tool's input as that argument alone
        [["get_weather", "Paris", PARIS], ["get_weather", "Tokyo", TOKYO]],
        [f"Here is what I found: {PARIS} {TOKYO}"],
    ),
    (
        "Is it raining in Lima?",
        "",  # the run raised: no answer, and its root span's status is ERROR
        "weather_agent",
        False,
        # the failed call's error: the span's status message, the exception and (as
        # OpenInference writes it) its traceback, cut to 2,000 characters
        [["get_weather", "Lima", '{"error":"ValueError(\'weather service unavailable for Lima\')']],
        [],
    ),
    (
        "What is the weather in Paris?",
        f"Here is what I found: {PARIS}",
        "weather_agent",
        True,
        [["get_weather", "Paris", PARIS]],
        [f"Here is what I found: {PARIS}"],
    ),
]


@pytest.mark.parametrize("form", ["otlp.json", "otlp.pb"])
def test_langgraph_traced_by_openinference_reads_its_answer_and_results(
    form: str, tmp_path: Path
) -> None:
    found = scored(DATA / form, tmp_path)
    failed = found[1][4][0]
    assert failed[2].startswith(EXPECTED[1][4][0][2]) and "Traceback" in failed[2]
    failed[2] = EXPECTED[1][4][0][2]
    assert found == EXPECTED
