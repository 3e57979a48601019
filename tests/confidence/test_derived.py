"""Derived mode: the batch rules against the one-trace oracle, and the rules themselves."""

from __future__ import annotations

import itertools

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from transforms.confidence import derived_factors, step_scores, trace_levels
from transforms.confidence.derived import STATEMENT_LINE, outcome_caps, result_is_error
from transforms.confidence.per_trace import (
    reference_is_error,
    reference_statement_lines,
    reference_trace_confidence,
)
from transforms.config.confidence import ConfidenceConfig, DerivedRules
from transforms.synth.traces import synthetic_traces

STEP = pl.Struct(
    {
        "step_id": pl.Int64,
        "type": pl.String,
        "tool_name": pl.String,
        "input": pl.String,
        "content": pl.String,
        "output_summary": pl.String,
    }
)


def step(
    step_id: int,
    kind: str,
    tool: str | None = None,
    content: str | None = None,
    output: str | None = None,
    arguments: str | None = None,
) -> dict[str, object]:
    return {
        "step_id": step_id,
        "type": kind,
        "tool_name": tool,
        "input": arguments,
        "content": content,
        "output_summary": output,
    }


EDGE_TRACES = [
    ("empty", 0.9, []),
    ("thought-only", 0.5, [step(0, "thought", content="hello")]),
    (
        "failed-search",
        0.8,
        [
            step(0, "tool_call", "web_search"),
            step(1, "error_recovery"),
            step(2, "tool_call", "calendar"),
        ],
    ),
    (
        "nameless-tool-last",
        0.7,
        [step(0, "thought"), step(5, "tool_call")],
    ),
    (
        "chat-import",
        1.0,
        [
            step(0, "thought", content="let me look"),
            step(1, "tool_call", "get_order", arguments='{"id": 7}'),
            step(2, "tool_call", "search_items"),
            step(3, "observation", content="Error: order 7 not found"),
            step(4, "observation", content="[]"),
            step(5, "thought", content="one more try"),
            step(6, "error_recovery", "get_order", arguments='{"id": 8}'),
            step(7, "observation", content='{"id": 8, "status": "shipped"}'),
        ],
    ),
    (
        "otel-like",
        0.12,
        [
            step(0, "thought", output="400 Bad Request"),
            step(1, "error_recovery", content="I will search."),
            step(2, "tool_call", "convert", output="celsius must be a number"),
            step(3, "error_recovery", "convert", output="69.8"),
            step(4, "tool_call", "lookup", output='{"isError": true, "content": []}'),
            step(5, "thought", content="done"),
        ],
    ),
    (
        "multi-line-thoughts",
        1.0,
        [
            step(
                0,
                "thought",
                content="Here are your options:\n\n1. HAT069\n- 06:00\n  ---\r\nWhich?",
            ),
            step(1, "tool_call", "lookup", output="found"),
            step(2, "thought", content="\n".join(f"line {i}" for i in range(30))),
            step(3, "thought", content="Überblick:\n東京\n٣\n...\n"),
            step(4, "thought", content="Done.\nAll three changes are made."),
        ],
    ),
    (
        "observation-before-call",
        0.95,
        [
            step(0, "observation", content="Error: stale"),
            step(1, "tool_call", "fetch"),
            step(2, "observation", content="ok"),
        ],
    ),
]


ANSWERS = {
    "thought-only": ("say hello", "Hello there"),
    "chat-import": ("Where is order 7?", "Order 8 has SHIPPED; order seven was never placed."),
    "otel-like": (None, "It is 21 degrees celsius, données météo 東京 unchecked"),
    "nameless-tool-last": ("Tell me", "42 % $"),
}
"""(objective, final answer) of edge traces; the others have neither."""


def traces_frame(rows: list[tuple[str, float, list[dict[str, object]]]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "trace_id": [r[0] for r in rows],
            "confidence": [r[1] for r in rows],
            "steps": [r[2] for r in rows],
            "objective": [ANSWERS.get(r[0], (None, None))[0] for r in rows],
            "result_summary": [ANSWERS.get(r[0], (None, None))[1] for r in rows],
        },
        schema={
            "trace_id": pl.String,
            "confidence": pl.Float64,
            "steps": pl.List(STEP),
            "objective": pl.String,
            "result_summary": pl.String,
        },
    )


def synthetic(n: int) -> pl.DataFrame:
    el = pl.element().struct
    return synthetic_traces(n, seed=3).select(
        trace_id="id",
        confidence=pl.col("outcome").struct.field("confidence"),
        objective=pl.col("task").struct.field("objective"),
        result_summary=pl.col("outcome").struct.field("result_summary"),
        steps=pl.col("steps").list.eval(
            pl.struct(
                step_id=el.field("step_id"),
                type=el.field("type"),
                tool_name=el.field("tool").struct.field("name"),
                input=el.field("input"),
                content=el.field("content"),
                output_summary=el.field("output_summary"),
            )
        ),
    )


def levels_of(traces: pl.DataFrame, config: ConfidenceConfig) -> pl.DataFrame:
    scored = step_scores(derived_factors(traces.lazy(), config), config)
    return trace_levels(
        scored, config, ordered=True, caps=outcome_caps(traces.lazy(), config.derived)
    ).collect()


@pytest.mark.parametrize(
    ("method", "source"),
    list(itertools.product(["mean", "min", "weighted", "critical_check"], ["edge", "synthetic"])),
)
@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_derived_batch_equals_reference(method: str, source: str, engine: str) -> None:
    config = ConfidenceConfig(aggregation=method)  # type: ignore[arg-type]
    traces = traces_frame(EDGE_TRACES) if source == "edge" else synthetic(1500)
    caps = outcome_caps(traces.lazy(), config.derived)
    scored = step_scores(derived_factors(traces.lazy(), config), config)
    decided = trace_levels(scored, config, ordered=True, caps=caps)
    levels = decided.collect(engine=engine)  # type: ignore[call-overload]
    shuffled = trace_levels(
        scored.collect().sample(fraction=1.0, shuffle=True, seed=1).lazy(), config, caps=caps
    )
    assert_frame_equal(levels, shuffled.collect(), check_row_order=False)
    assert levels.height == traces.height
    by_id = {row["trace_id"]: row for row in levels.iter_rows(named=True)}
    for trace in traces.iter_rows(named=True):
        expected = reference_trace_confidence(
            trace["steps"], trace["confidence"], config, trace["result_summary"], trace["objective"]
        )
        got = by_id[trace["trace_id"]]
        assert got["aggregate"] == expected.aggregate
        assert (got["level"], got["reason"], got["recommended_action"]) == (
            expected.level.value,
            expected.reason,
            expected.recommended_action,
        )
        assert got["steps"] == len(expected.steps)


def test_failures_are_read_from_the_results_in_every_shape() -> None:
    steps = derived_factors(traces_frame(EDGE_TRACES).lazy(), ConfidenceConfig()).collect()
    chat = steps.filter(pl.col("trace_id") == "chat-import")
    # get_order answered by the first observation (an error): a plan step; search_items by
    # "[]" and the retry (other input) by a JSON object whose status is not an error: calls
    # that did not fail and repeat nothing, counted by the answer only.
    assert chat["step_kind"].to_list() == ["thought", "tool_call", "thought", "answer"]
    assert chat["tool_success_count"].to_list() == [0, 0, 0, 2]
    assert chat["search_result_count"].to_list() == [0, 0, 0, 0]
    assert chat["is_search_step"].to_list() == [False, False, False, False]
    assert chat["tool_execution_count"].to_list()[-1] == 3
    otel = steps.filter(pl.col("trace_id") == "otel-like")
    assert otel["step_kind"].to_list() == ["thought", "thought", "tool_call"] + [
        "tool_call",
        "tool_call",
        "thought",
        "answer",
    ]
    # convert failed (a retry follows it), its retry (same tool, same input: a repeat) did
    # not, lookup flagged isError.
    assert otel["tool_success_count"].to_list() == [0, 0, 0, 1, 0, 0, 1]
    early = steps.filter(pl.col("trace_id") == "observation-before-call")
    assert early["step_kind"].to_list() == ["answer"]
    assert early["tool_success_count"].to_list() == [1]
    assert steps.filter(pl.col("trace_id") == "empty")["step_kind"].to_list() == ["answer"]


def test_only_failed_or_repeated_calls_are_plan_steps() -> None:
    lookup = {"tool": "lookup", "output": "found"}
    calls = [
        step(0, "tool_call", **lookup, arguments='{"q": "a"}'),
        step(1, "tool_call", **lookup, arguments='{"q": "b"}'),
        step(2, "tool_call", **lookup, arguments='{"q": "a"}'),
    ]
    traces = traces_frame([("three-calls", 1.0, calls), ("one-call", 1.0, calls[:1])])
    steps = derived_factors(traces.lazy(), ConfidenceConfig()).collect()
    three = steps.filter(pl.col("trace_id") == "three-calls")
    assert three["step_kind"].to_list() == ["tool_call", "answer"]
    assert three["source_step_id"].to_list() == [2, None]
    levels = levels_of(traces, ConfidenceConfig())
    by_id = dict(zip(levels["trace_id"], levels["aggregate"], strict=True))
    assert by_id["three-calls"] < by_id["one-call"] == 1.0


@pytest.mark.parametrize(
    ("answer", "capped"), [("", True), ("  \n", True), ("done", False), (None, False)]
)
def test_a_blank_answer_caps_the_confidence(answer: str | None, *, capped: bool) -> None:
    config = ConfidenceConfig()
    traces = traces_frame([("t", 1.0, [step(0, "thought", content="x")])]).with_columns(
        result_summary=pl.lit(answer, pl.String)
    )
    levels = levels_of(traces, config)
    expected = reference_trace_confidence(traces["steps"][0].to_list(), 1.0, config, answer)
    assert levels["aggregate"][0] == pytest.approx(expected.aggregate)
    assert levels["reason"][0] == expected.reason
    assert (levels["aggregate"][0] == config.derived.empty_answer_cap) is capped
    assert (levels["level"][0] == "ESCALATE") is capped


@pytest.mark.parametrize(
    ("result", "error"),
    [
        ("Error: not enough seats", True),
        ("  error 42", True),
        ("Traceback (most recent call last):", True),
        ("Failed to connect", True),
        ('{"error": "timeout"}', True),
        ('{"error": {"code": 5}}', True),
        ('{"errors": []}', False),
        ('{"error": null, "data": 1}', False),
        ('{"error": false}', False),
        ('{"status": "FAILED"}', True),
        ('{"status": "ok"}', False),
        ('{"isError": true}', True),
        ('{"is_error": false}', False),
        ('{"success": false}', True),
        ('{"ok": true}', False),
        ("[1, 2]", False),
        (' \n\t{"error": "x"}', True),  # whitespace before the object: still parsed
        ('\r\n{"isError": true}', True),
        ('see {"error": 1}', False),  # text before the brace: not a JSON object
        ('{"error": 1} and more', False),
        ("no errors found", False),
        ("", False),
        (None, False),
    ],
)
def test_error_rules_agree_with_the_reference(result: str | None, error: bool) -> None:
    rules = DerivedRules()
    batch = pl.select(result_is_error(pl.lit(result, pl.String), rules)).item()
    assert batch is error
    assert reference_is_error(result, rules) is error


def test_error_rules_are_configurable() -> None:
    rules = DerivedRules(error_pattern="^ERR", error_keys=("fault",), success_flags=())
    frame = pl.DataFrame({"r": ["ERR x", "Error: x", '{"fault": "x"}', '{"success": false}']})
    assert frame.select(result_is_error(pl.col("r"), rules))["r"].to_list() == [
        True,
        False,
        True,
        False,
    ]


def test_a_recorded_tool_failure_lowers_the_level() -> None:
    config = ConfidenceConfig()
    clean = [step(0, "tool_call", "fetch", output="42 rows"), step(1, "thought", content="ok")]
    failed = [step(0, "tool_call", "fetch", output="Error: 503"), step(1, "thought")]
    levels = levels_of(traces_frame([("clean", 1.0, clean), ("failed", 1.0, failed)]), config)
    by_id = {row["trace_id"]: row for row in levels.iter_rows(named=True)}
    assert by_id["failed"]["aggregate"] < by_id["clean"]["aggregate"]
    assert "tool_failures(rate=0.00)" in by_id["failed"]["penalties"]
    assert by_id["failed"]["level"] not in ("SILENT", "NOTIFY")


@pytest.mark.parametrize("trace", EDGE_TRACES, ids=[t[0] for t in EDGE_TRACES])
def test_lower_outcome_confidence_never_gives_a_calmer_level(
    trace: tuple[str, float, list[dict[str, object]]],
) -> None:
    name, _, steps = trace
    grid = [i / 20 for i in range(21)]
    rows = [(f"{name}-{c}", c, steps) for c in grid]
    levels = levels_of(traces_frame(rows), ConfidenceConfig())
    aggregates = levels["aggregate"].to_list()
    assert aggregates == sorted(aggregates)
    order = ["ESCALATE", "CONFIRM", "NOTIFY", "SILENT"]
    ranks = [order.index(level) for level in levels["level"]]
    assert ranks == sorted(ranks)
    assert levels["level"][0] == "ESCALATE"
    assert "capped at 0.0 by the trace's outcome" in levels["reason"][0]


def test_the_answer_is_covered_by_the_words_the_trace_held_before_it() -> None:
    steps = derived_factors(traces_frame(EDGE_TRACES).lazy(), ConfidenceConfig()).collect()
    answers = steps.filter(pl.col("step_kind") == "answer")
    coverage = dict(zip(answers["trace_id"], answers["query_coverage"], strict=True))
    # order (the objective) and shipped (a result, another case) of order, shipped, seven,
    # never, placed; the last thought ("hello") is the answer being written, not evidence;
    # celsius of degrees, celsius, données, météo, unchecked (東京: no spaces, no word).
    assert coverage["chat-import"] == 2 / 5
    assert coverage["thought-only"] == 1 / 2
    assert coverage["otel-like"] == 1 / 5
    assert coverage["nameless-tool-last"] is None  # "42 % $": no word to look for
    assert coverage["empty"] is None  # no answer recorded
    off = ConfidenceConfig(derived=DerivedRules(answer_support=False))
    plain = derived_factors(traces_frame(EDGE_TRACES).lazy(), off).collect()
    assert plain["query_coverage"].null_count() == plain.height


def test_less_support_for_the_answer_never_gives_a_calmer_level() -> None:
    held = [step(0, "tool_call", "lookup", output="alpha bravo charlie delta echo")]
    words = ["alpha", "bravo", "charlie", "delta", "echo"]
    answers = [" ".join(words[:k] + [f"unknown{'x' * i}" for i in range(5 - k)]) for k in range(6)]
    rows = [(f"support-{k}", 1.0, held) for k in range(6)]
    traces = traces_frame(rows).with_columns(result_summary=pl.Series(answers))
    config = ConfidenceConfig()
    levels = levels_of(traces, config)
    aggregates = levels["aggregate"].to_list()
    assert aggregates == sorted(aggregates)
    assert aggregates[0] < aggregates[-1] == 1.0
    # no support at all still counts (just above the floor): lower than an answer of numbers
    numbers = levels_of(traces.head(1).with_columns(result_summary=pl.lit("42")), config)
    assert aggregates[0] < numbers["aggregate"][0]
    for row, answer in zip(traces.iter_rows(named=True), answers, strict=True):
        expected = reference_trace_confidence(row["steps"], 1.0, config, answer)
        assert (
            expected.aggregate
            == levels.filter(pl.col("trace_id") == row["trace_id"])["aggregate"].item()
        )


def test_a_thought_before_the_last_step_is_a_plan_step_per_statement_line() -> None:
    traces = traces_frame([t for t in EDGE_TRACES if t[0] == "multi-line-thoughts"])
    steps = derived_factors(traces.lazy(), ConfidenceConfig()).collect()
    thoughts = steps.filter(pl.col("step_kind") == "thought")
    # 4 lines with a letter or digit (not the blank one, "---" or the bare CR), 30 capped at
    # 20, 3 (a CJK line and an Arabic-Indic digit count, "..." does not), and the last step
    # (the answer being written) once whatever its lines.
    assert thoughts["source_step_id"].value_counts().sort("source_step_id").rows() == [
        (0, 4),
        (2, 20),
        (3, 3),
        (4, 1),
    ]
    assert (
        thoughts.group_by("source_step_id")
        .agg(pl.col("step_index").n_unique())["step_index"]
        .to_list()
        == [1] * 4
    )
    one = ConfidenceConfig(derived=DerivedRules(thought_lines_max=1))
    plain = derived_factors(traces.lazy(), one).collect()
    assert plain.filter(pl.col("step_kind") == "thought").height == 4


def test_more_statement_lines_never_give_a_calmer_level() -> None:
    answered = [step(1, "tool_call", "lookup", output="a"), step(2, "thought", content="a")]
    rows = [
        (f"lines-{k}", 1.0, [step(0, "thought", content="\n".join(["a"] * k)), *answered])
        for k in range(1, 25)
    ]
    levels = levels_of(traces_frame(rows), ConfidenceConfig())
    aggregates = levels.sort(pl.col("trace_id").str.extract(r"(\d+)").cast(pl.Int64))["aggregate"]
    assert aggregates.to_list() == sorted(aggregates.to_list(), reverse=True)
    assert aggregates[0] > aggregates[-1]
    assert aggregates[19] == aggregates[-1]  # 20 lines and more: the cap


@given(st.text(alphabet=st.sampled_from("ab7 .-*#\n\r\t\x0b\x0c\x1c\u2028\u00a0é東٣Ⅻ①_")))
def test_statement_lines_agree_with_the_reference(text: str) -> None:
    lines = pl.select(pl.lit(text).str.count_matches(STATEMENT_LINE)).item()
    assert min(max(lines, 1), 1000) == reference_statement_lines(text, 1000)
