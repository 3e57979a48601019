"""Strands Agents' own spans (tests/data/strands, made by its capture.py: a weather agent asked
three questions, the third's tool raising, Strands handing the error back to the model) score
with no flag, from a Collector's file (OTLP JSON lines and protobuf) and from the SDK's console
exporter alike. Strands keeps a call's messages in span events by default (`gen_ai.user.message`,
`gen_ai.choice`, ...; a tool's arguments and result too), which the readers dropped: every trace
was quarantined `missing_objective`. With the conventions' newest names (`latest/`) the messages
are in a `gen_ai.client.inference.operation.details` event, and a tool's arguments and result
are the span's own attributes (the result as Strands writes it, its content blocks as JSON)."""

from __future__ import annotations

from pathlib import Path

import pytest
from captured import PARIS, TOKYO, scored

DATA = Path(__file__).resolve().parents[1] / "data" / "strands"

LIMA_ERROR = "weather service unavailable for Lima"


def _expected(blocks: bool) -> list[tuple[object, ...]]:
    """The three traces; with `blocks`, a tool's result as Strands' attribute writes it."""

    def result(text: str) -> str:
        return f'[{{"text": "{text}"}}]' if blocks else text

    answers = [
        f"Here is what I found: {PARIS} {TOKYO}",
        f"Here is what I found: Error: {LIMA_ERROR}",
        f"Here is what I found: {PARIS}",
    ]
    calls = [
        [
            ["get_weather", '{"city": "Paris"}', result(PARIS)],
            ["get_weather", '{"city": "Tokyo"}', result(TOKYO)],
        ],
        # the tool raised: its span's status is ERROR, with the exception's message
        [["get_weather", '{"city": "Lima"}', f'{{"error":"{LIMA_ERROR}"}}']],
        [["get_weather", '{"city": "Paris"}', result(PARIS)]],
    ]
    objectives = [
        "Compare the weather in Tokyo and Paris.",
        "Is it raining in Lima?",
        "What is the weather in Paris?",
    ]
    return [
        # Strands' agent span ends its answer with a newline; the model's reply has none
        (objective, answer + "\n", "weather_agent", True, tools, [answer])
        for objective, answer, tools in zip(objectives, answers, calls, strict=True)
    ]


@pytest.mark.parametrize(
    ("form", "blocks"),
    [("otlp.json", False), ("otlp.pb", False), ("console.json", False), ("latest", True)],
)
def test_strands_spans_score_from_each_exporter(form: str, blocks: bool, tmp_path: Path) -> None:
    assert scored(DATA / form, tmp_path) == _expected(blocks)


@pytest.mark.parametrize("form", ["console.json", "otlp.pb"])
def test_a_step_latency_is_its_span_time_to_the_nanosecond(form: str, tmp_path: Path) -> None:
    latencies = [
        row[0]
        for row in scored(
            DATA / form,
            tmp_path,
            "SELECT unnest(list_transform(steps, s -> s.latency_ms)) FROM traces",
        )
    ]
    assert latencies and all(latency is not None for latency in latencies)
    # whole nanoseconds in milliseconds: each value the double nearest its six-decimal text,
    # as dividing by 1e6 gives; Polars' reciprocal left 49.718 ms as 49.717999999999996
    assert [float(f"{latency:.6f}") for latency in latencies] == latencies
