"""Google ADK 2.13's own spans, with the message content in them (tests/data/google-adk, made by
its capture.py: three questions, the third's tool raising, which fails the run), as a
Collector's file holds them, score with no flag. ADK sums up a model's parallel calls in one
more span whose tool is "(merged tools)": it is no call (it was a third, empty one)."""

from __future__ import annotations

from pathlib import Path

import pytest
from captured import PARIS, TOKYO, scored

DATA = Path(__file__).resolve().parents[1] / "data" / "google-adk"

# ADK hands the model, and records, a function's result as {"result": ...}
RESULT = {city: f'{{"result": "{text}"}}' for city, text in (("Paris", PARIS), ("Tokyo", TOKYO))}
ANSWERS = {
    "Compare": f"Here is what I found: {RESULT['Paris']} {RESULT['Tokyo']}",
    "Paris": f"Here is what I found: {RESULT['Paris']}",
}
EXPECTED = [
    (
        "Compare the weather in Tokyo and Paris.",
        ANSWERS["Compare"],
        "weather_agent",
        None,  # no outcome recorded (status UNSET): unknown
        [
            ["get_weather", '{"city": "Paris"}', RESULT["Paris"]],
            ["get_weather", '{"city": "Tokyo"}', RESULT["Tokyo"]],
        ],
        [ANSWERS["Compare"]],
    ),
    (
        "Is it raining in Lima?",
        "",  # the run raised: no answer, and its span's status is ERROR
        "weather_agent",
        False,
        [
            [
                "get_weather",
                '{"city": "Lima"}',
                '{"error":"ValueError: weather service unavailable for Lima"}',
            ]
        ],
        [],
    ),
    (
        "What is the weather in Paris?",
        ANSWERS["Paris"],
        "weather_agent",
        None,
        [["get_weather", '{"city": "Paris"}', RESULT["Paris"]]],
        [ANSWERS["Paris"]],
    ),
]


@pytest.mark.parametrize("form", ["otlp.json", "otlp.pb"])
def test_google_adk_spans_score_without_the_merged_tools_span(form: str, tmp_path: Path) -> None:
    assert scored(DATA / form, tmp_path) == EXPECTED
