"""Langfuse trace lines read column-wise give the span rows the per-line reader gives.

`storage.spans._langfuse_lines.langfuse_block` takes the lines Polars can read as the per-line
reader would and leaves the rest to it. Every line it takes must come out as the per-line
reader (`storage.spans.phoenix.span_rows`, `phoenix_rows`) makes it, byte for byte except the text
of a message list, which the OTel mapping decodes (compared decoded). The lines below are
written to reach each rule of `storage.spans.langfuse._row`: message lists in every shape the
reader rewrites, tools found by name, ids that are not OTel ids, inputs that are text holding
JSON, floats, escapes, nested and null attributes, trace inputs on the top spans.
"""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from storage.errors import RecordRejected
from storage.inputs.json_values import parse_record
from storage.spans import otel_files
from storage.spans._langfuse_lines import langfuse_block
from storage.spans._otlp import rows_frame
from storage.spans.otel_files import iter_span_chunks, key_check
from storage.spans.phoenix import phoenix_rows, span_rows
from transforms.config.otel import OtelImportConfig
from transforms.otel_spans import RAW_SPAN_SCHEMA, wanted_key_filter

CONFIG = OtelImportConfig()
MESSAGE_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages")
DATA = Path(__file__).resolve().parents[1] / "data" / "langfuse"


def _per_line(lines: list[tuple[int, str]]) -> pl.DataFrame:
    found = []
    for number, text in lines:
        try:
            value = parse_record(text, f"line {number}")
        except RecordRejected:
            continue
        found.extend((number, row) for row in span_rows(value) or [])
    return rows_frame(phoenix_rows(found, "f.jsonl", key_check(CONFIG)))


def _comparable(frame: pl.DataFrame) -> list[dict[str, Any]]:
    rows = frame.to_dicts()
    for row in rows:
        row["attributes"] = [
            (a["key"], json.loads(a["value"]) if a["key"] in MESSAGE_KEYS else a["value"])
            for a in row["attributes"]
        ]
    return rows


def _columns(lines: list[tuple[int, str]]) -> tuple[pl.DataFrame, set[int]]:
    return langfuse_block(lines, "f.jsonl", lambda key: wanted_key_filter(key, CONFIG))


def _time(rng: random.Random) -> str:
    day = f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}"
    clock = f"{rng.randint(10, 23)}:{rng.randint(10, 59)}:{rng.randint(10, 59)}"
    return rng.choice(
        [
            f"{day}T{clock}.{rng.randint(0, 999):03d}Z",
            f"{day} {clock}.{rng.randint(0, 999999):06d}",
            f"{day}T{clock}+05:30",
            f"{day}T{clock}",
        ]
        + ([f"{day}T{clock}.1234567Z"] if rng.random() < 0.05 else [])  # past the microsecond
    )


_ODD: list[Any] = [
    '{"query": "text holding JSON"}',
    "  [leading space]",
    {"integral": 2.0},
    {"tiny": 1e-07},
    {"path": "C:\\temp\\file", "tab": "a\tb"},
    {"big": 12345678901234567890},
]
"""Values Polars would write otherwise, or that are text holding JSON: rare, as in a file."""
_INPUTS: list[Any] = [
    None,
    "plain question",
    "",
    {"item": 7, "tags": ["a", "b"], "nested": {"deep": True}},
    {"ratio": 0.25, "count": 3},
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why?"}],
    [{"role": "user", "parts": [{"type": "text", "content": "Order 12, é ✓"}]}],
    [{"type": "human", "content": "LangChain asks"}],
    [{"role": "user", "content": [{"type": "text", "text": "parts"}]}],
    {"messages": [{"role": "user", "content": "OpenAI request"}], "model": "gpt-4o"},
    [{"role": "", "content": "empty role"}],
    [],
    42,
    True,
]
_OUTPUTS: list[Any] = [
    None,
    "a plain answer",
    {"role": "assistant", "content": "one message"},
    [{"role": "assistant", "parts": [{"type": "tool_call", "name": "lookup", "id": "c1"}]}],
    [
        {"role": "user", "content": "history"},
        {"role": "assistant", "content": "last answer"},
    ],
    {"choices": [{"message": {"role": "assistant", "content": "completion"}}]},
    [{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "lookup"}}]}],
    {"result": "ok", "score": 0.5},
    [{"role": "user", "content": "no answer"}],
]


def _attributes(rng: random.Random) -> dict[str, Any] | None:
    pool: dict[str, Any] = {
        "gen_ai.operation.name": rng.choice(["chat", "execute_tool", "invoke_agent"]),
        "gen_ai.agent.name": rng.choice(["support", "agent \u00e9", None, 1, 0, True]),
        "gen_ai.usage.input_tokens": rng.randint(0, 500),
        "gen_ai.request.temperature": rng.choice([0.7, 0.25]),
        "gen_ai.tool.name": "lookup",
        "llm.input_messages": [{"message.role": "user", "message.content": "flat"}],
        "input.value": rng.choice([None, "attribute input"]),
        "tool.parameters": {"item": {"type": "integer"}},
        "gen_ai.conversation.id": str(uuid.UUID(int=rng.getrandbits(128))),
        "flag": rng.choice([True, False]),
    }
    keys = rng.sample(sorted(pool), rng.randint(0, len(pool)))
    return None if rng.random() < 0.1 else {key: pool[key] for key in keys}


def _observation(rng: random.Random, trace: str, parent: str | None, kind: str) -> dict[str, Any]:
    hexid = rng.random() < 0.7
    start = _time(rng)
    metadata: Any = {"attributes": _attributes(rng), "resourceAttributes": {"service.name": "s"}}
    if rng.random() < 0.1:
        metadata = json.dumps(metadata)  # Langfuse's downloads keep it as text
    return {
        "id": f"{rng.getrandbits(64):016x}" if hexid else str(uuid.UUID(int=rng.getrandbits(128))),
        "traceId": rng.choice([trace, trace, None, ""]),
        "parentObservationId": parent,
        "type": kind,
        "name": rng.choice(["lookup", "chat gpt-4o", "agent run", None]),
        "startTime": start,
        "endTime": rng.choice([start, _time(rng), None, ""]),
        "level": rng.choice(["DEFAULT", "ERROR", "error", "WARNING", None]),
        "statusMessage": rng.choice([None, "", "timed out"]),
        "input": rng.choice(_ODD if rng.random() < 0.02 else _INPUTS),
        "output": rng.choice(_ODD if rng.random() < 0.02 else _OUTPUTS),
        "metadata": metadata,
        "model": rng.choice([None, "", "gpt-4o"]),  # a generation's names its model
    }


def _trace_line(rng: random.Random) -> str:
    trace = rng.choice([f"{rng.getrandbits(128):032x}", str(uuid.UUID(int=rng.getrandbits(128)))])
    root = _observation(rng, trace, None, rng.choice(["AGENT", "SPAN", "CHAIN"]))
    kinds = ["GENERATION", "TOOL", "SPAN", "EVENT", "generation", "RETRIEVER"]
    parents = [root["id"], root["id"], "not-in-this-trace", None]
    items = [root] + [
        _observation(rng, trace, rng.choice(parents), rng.choice(kinds))
        for _ in range(rng.randint(1, 7))
    ]
    trace_fields = {
        "id": trace,
        "input": rng.choice([None, "the user's task", {"task": "structured"}]),
        "output": rng.choice([None, "the final answer"]),
        "version": rng.choice([None, "", "2.1"]),
        "tags": rng.choice(
            [None, [], ["prod"], ["canary", "eu-west", "ünïcode"], ['a "quoted" tag']]
        ),
    }
    if rng.random() < 0.3:
        value: dict[str, Any] = {"trace": trace_fields, "observations": items}
    else:
        value = {**trace_fields, "timestamp": _time(rng), "name": "run", "observations": items}
    return json.dumps(value, ensure_ascii=rng.random() < 0.5)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_line_the_columns_take_reads_as_the_per_line_reader_reads_it(seed: int) -> None:
    rng = random.Random(seed)
    lines = [(number, _trace_line(rng)) for number in range(1, 401)]

    taken, left = _columns(lines)

    claimed = [(number, text) for number, text in lines if number not in left]
    assert 40 < len(claimed) < len(lines)  # both readers are exercised
    assert _comparable(taken) == _comparable(_per_line(claimed))


def test_plain_langfuse_traces_are_all_taken_by_the_columns() -> None:
    rng = random.Random(7)
    lines = []
    for number in range(1, 51):
        trace = f"{rng.getrandbits(128):032x}"
        root = {"id": f"{rng.getrandbits(64):016x}", "traceId": trace, "type": "AGENT"}
        call = {
            "id": f"{rng.getrandbits(64):016x}",
            "traceId": trace,
            "parentObservationId": root["id"],
            "type": "GENERATION",
            "startTime": "2026-01-01T00:00:00.000Z",
            "input": [{"role": "user", "content": f"question {number}"}],
            "output": [{"role": "assistant", "content": "answer"}],
            "metadata": {"attributes": {"gen_ai.request.model": "gpt-4o"}},
        }
        tool = {**call, "id": f"{rng.getrandbits(64):016x}", "type": "TOOL", "name": "lookup"}
        tool.update(input={"item": number}, output="found")
        value = {"id": trace, "timestamp": "t", "observations": [root, call, tool]}
        lines.append((number, json.dumps(value)))

    taken, left = _columns(lines)

    assert left == set()
    assert _comparable(taken) == _comparable(_per_line(lines))


def test_a_line_the_decoder_refuses_is_left_to_the_per_line_reader_alone() -> None:
    rng = random.Random(5)
    good = [_trace_line(rng), _trace_line(rng)]
    lines = [
        (1, good[0]),
        (2, "{not json"),
        (3, good[1]),
        (4, good[0].replace('"observations"', '"version": 2, "observations"', 1)),
        (5, good[0].replace('"observations"', '"nan": NaN, "observations"', 1)),
    ]

    taken, left = _columns(lines)

    # malformed; a number where text belongs; NaN, which json.loads reads and msgspec does not
    assert left == {2, 4, 5}
    assert set(taken["record_number"].to_list()) == {1, 3}
    assert _comparable(taken) == _comparable(_per_line([lines[0], lines[2]]))


def test_a_file_reads_the_same_with_and_without_the_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(11)
    texts = [_trace_line(rng) for _ in range(300)]
    texts[40] = '{"id": "x", "timestamp": "t", "observations": []}'  # no span: rejected
    texts[41] = "[1, 2]"
    texts[42] = ""
    path = tmp_path / "langfuse.jsonl"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")

    def chunks() -> tuple[pl.DataFrame, list[dict[str, Any]], int]:
        found = list(iter_span_chunks(path, CONFIG, chunk_bytes=64 << 10))
        spans = pl.concat([chunk.spans for chunk in found])
        return spans, [r for c in found for r in c.rejections], sum(c.records for c in found)

    with_columns = chunks()
    monkeypatch.setattr(
        otel_files,
        "langfuse_block",
        lambda lines, *_: (pl.DataFrame(schema=RAW_SPAN_SCHEMA), {n for n, _ in lines}),
    )
    per_line = chunks()

    assert _comparable(with_columns[0]) == _comparable(per_line[0])
    assert with_columns[1:] == per_line[1:]
    assert [r["record_number"] for r in with_columns[1]] == [41, 42]


def test_langfuse_downloads_read_the_same_either_way() -> None:
    lines = [
        (number, json.dumps(json.loads(path.read_text(encoding="utf-8"))))
        for number, path in enumerate(sorted(DATA.glob("*.trace.json")), 1)
    ]

    taken, left = _columns(lines)

    claimed = [(number, text) for number, text in lines if number not in left]
    # their floats and escaped text are taken; a surrogate escape (an emoji) leaves a line
    assert len(claimed) >= len(lines) - 2
    assert _comparable(taken) == _comparable(_per_line(claimed))


def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


def test_a_line_nested_too_deep_is_left_to_the_per_line_reader_wherever_it_nests() -> None:
    def line(number: int, **extra: Any) -> tuple[int, str]:
        observation = {
            "id": f"{number:x}{'ab' * 8}"[:16],
            "traceId": f"{number:x}{'cd' * 16}"[:32],
            "type": "TOOL",
            "name": "lookup",
            **extra,
        }
        return number, json.dumps({"id": "t", "timestamp": "t", "observations": [observation]})

    lines = [
        line(
            1, input={"history": [{"role": "user", "content": f"q{n}"} for n in range(150)]}
        ),  # wide, not deep
        line(2, input=_nested(97)),  # 100 levels with the line's own 3: allowed
        line(3, output=_nested(98)),  # 101 levels
        line(4, usage={"details": _nested(97)}),  # 101, in a field the columns do not read
        line(5, input="[" * 200),  # brackets in text do not nest
    ]

    taken, left = _columns(lines)

    assert left == {3, 4}
    assert _comparable(taken) == _comparable(_per_line([p for p in lines if p[0] not in left]))
    for number, text in lines:
        deep = number in left
        with pytest.raises(RecordRejected) if deep else _nothing():
            parse_record(text, "line")


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None
