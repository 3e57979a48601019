"""W&B Weave's calls as a user exports them (tests/data/weave, made by its capture.py: a plain
OpenAI agent and its tool under `@weave.op`, the client patched by Weave's OpenAI integration;
three runs, the third failing on a tool's exception) score with no flag: the SDK's
`get_calls()` as `[call.to_dict() ...]` in one array, and the service API's `calls/stream_query`
lines. The agent is the root call's op, a model call the integration's request and
`ChatCompletion` (its kind `llm`), a failed call the SDK's exception (`Type: message`). The
tool is a call of no kind, as Weave's quick start writes it, that the model asked for by name;
given `kind="tool"` (`kinds.json`) it reads the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from captured import scored, weather_traces

DATA = Path(__file__).resolve().parents[1] / "data" / "weave"

FAILED = '{"error":"ValueError: weather service unavailable for Lima"}'

EXPECTED = weather_traces(FAILED)


@pytest.mark.parametrize("name", ["calls.json", "calls.jsonl", "kinds.json"])
def test_weave_calls_read_as_their_traces(name: str, tmp_path: Path) -> None:
    assert scored(DATA / name, tmp_path) == EXPECTED


def test_a_call_of_no_kind_no_model_asked_for_is_no_tool_call(tmp_path: Path) -> None:
    """A traced helper (`@weave.op` with no kind, not a tool the model asked for) is a chain:
    with the Paris run's tool renamed, that run has no tool call left."""
    calls = json.loads((DATA / "calls.json").read_text())
    paris = {c["trace_id"] for c in calls if c["inputs"].get("question", "").endswith("Paris?")}
    for call in calls:
        if call["trace_id"] in paris and "/op/get_weather:" in call["op_name"]:
            call["op_name"] = call["op_name"].replace("/op/get_weather:", "/op/lookup_city:")
    source = tmp_path / "given" / "calls.json"
    source.parent.mkdir()
    source.write_text(json.dumps(calls))
    found = scored(source, tmp_path)
    assert found[2][4] == [] and found[:2] == EXPECTED[:2]
