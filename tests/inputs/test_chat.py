"""The chat-trajectory mapping: every rule of docs/import.md and every kind of bad input."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transforms.chat import ChatImport, ChatRecord, map_trajectories
from transforms.config.chat import ChatImportConfig

SYSTEM = {"role": "system", "content": "You are an airline agent."}
USER = {"role": "user", "content": "Cancel reservation ABC123."}


def call(
    name: str, args: Any = "{}", id_: str | None = "c1", text: str | None = None
) -> dict[str, Any]:
    tool_call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": args}}
    if id_ is not None:
        tool_call["id"] = id_
    return {"role": "assistant", "content": text, "tool_calls": [tool_call]}


def result(content: str, id_: Any = "c1") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": id_, "name": "ignored", "content": content}


def say(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def record(*messages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"task_id": 7, "trial": 0, "reward": 1.0, "traj": [SYSTEM, USER, *messages]} | fields


def mapped(*records: Any, **config: Any) -> ChatImport:
    rows = [ChatRecord(index + 1, index, value) for index, value in enumerate(records)]
    return map_trajectories(rows, ChatImportConfig(**config))


def only_trace(value: Any, **config: Any) -> dict[str, Any]:
    out = mapped(value, **config)
    assert out.rejections == [], out.rejections
    (trace,) = out.traces
    return trace


def kinds(trace: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(step["type"], (step["tool"] or {}).get("name")) for step in trace["steps"]]


def rejected(value: Any, **config: Any) -> tuple[str, str]:
    out = mapped(value, **config)
    assert out.traces == []
    (rejection,) = out.rejections
    return rejection.rule, rejection.reason


def test_messages_become_thought_tool_call_and_observation_steps_in_order() -> None:
    trace = only_trace(
        record(
            say("Let me look that up."),
            call("get_reservation", '{"id":"ABC123"}', text="Checking now."),
            result('{"status": "active"}'),
            say("Your reservation is active."),
            {"role": "user", "content": "Thanks"},
        )
    )
    assert trace["steps"] == [
        {
            "step_id": 0,
            "type": "thought",
            "content": "Let me look that up.",
            "tool": None,
            "input": None,
            "output_summary": None,
            "latency_ms": None,
        },
        {
            "step_id": 1,
            "type": "thought",
            "content": "Checking now.",
            "tool": None,
            "input": None,
            "output_summary": None,
            "latency_ms": None,
        },
        {
            "step_id": 2,
            "type": "tool_call",
            "content": None,
            "tool": {"name": "get_reservation"},
            "input": '{"id":"ABC123"}',
            "output_summary": None,
            "latency_ms": None,
        },
        {
            "step_id": 3,
            "type": "observation",
            "content": '{"status": "active"}',
            "tool": None,
            "input": None,
            "output_summary": None,
            "latency_ms": None,
        },
        {
            "step_id": 4,
            "type": "thought",
            "content": "Your reservation is active.",
            "tool": None,
            "input": None,
            "output_summary": None,
            "latency_ms": None,
        },
    ]
    assert trace["task"]["objective"] == "Cancel reservation ABC123."
    assert trace["outcome"]["result_summary"] == "Your reservation is active."


def test_blank_assistant_text_is_no_step_and_several_calls_keep_their_order() -> None:
    message = {
        "role": "assistant",
        "content": "  \n",
        "tool_calls": [
            {"id": "a", "function": {"name": "first", "arguments": {"b": 2, "a": "é"}}},
            {"id": "b", "function": {"name": "second", "arguments": None}},
        ],
    }
    trace = only_trace(record(message, result("one", "b"), result("two", "a")))
    assert kinds(trace) == [
        ("tool_call", "first"),
        ("tool_call", "second"),
        ("observation", None),
        ("observation", None),
    ]
    assert trace["steps"][0]["input"] == '{"a":"é","b":2}'
    assert trace["steps"][1]["input"] is None
    assert trace["outcome"]["result_summary"] == ""


def test_content_parts_join_their_text_and_skip_other_parts() -> None:
    user = {
        "role": "user",
        "content": [
            {"type": "text", "text": "Book"},
            {"type": "image_url", "image_url": {"url": "x"}},
            {"type": "text", "text": "a flight"},
        ],
    }
    trace = only_trace({"task_id": 1, "trial": 0, "reward": 0, "traj": [user, say("ok")]})
    assert trace["task"]["objective"] == "Book\na flight"


def test_objective_field_replaces_the_first_user_message() -> None:
    value = record(
        say("ok"), info={"task": {"instruction": "You are a traveller flying to Seattle."}}
    )
    assert (
        only_trace(value, objective_field="info.task.instruction")["task"]["objective"]
        == "You are a traveller flying to Seattle."
    )
    rule, reason = rejected(value, objective_field="info.missing")
    assert rule == "missing_objective" and "info.missing is missing" in reason


def test_answer_field_is_the_answer_where_the_record_has_one() -> None:
    value = record(say("Let me check."), say("I fixed it."), info={"patch": "diff --git a/x b/x"})
    # the record's answer, not the last assistant text, which stays a thought
    trace = only_trace(value, answer_field="info.patch")
    assert trace["outcome"]["result_summary"] == "diff --git a/x b/x"
    assert [step["content"] for step in trace["steps"]] == ["Let me check.", "I fixed it."]
    # a record without the field keeps the last assistant text
    assert (
        only_trace(record(say("ok")), answer_field="info.patch")["outcome"]["result_summary"]
        == "ok"
    )
    rule, reason = rejected(record(say("ok"), info={"patch": 7}), answer_field="info.patch")
    assert rule == "malformed_record" and "info.patch is int 7" in reason


def test_a_trajectory_without_a_user_message_has_no_objective() -> None:
    rule, reason = rejected({"task_id": 1, "trial": 0, "reward": 1, "traj": [SYSTEM, say("hello")]})
    assert rule == "missing_objective" and "objective_field" in reason


def test_a_retry_of_the_failed_tool_after_an_error_is_error_recovery() -> None:
    trace = only_trace(
        record(
            call("book", '{"amount":255}', "c1"),
            result("Error: payment amount does not add up, total price is 305", "c1"),
            call("calculate", '{"expression":"305-250"}', "c2"),
            result("55.0", "c2"),
            call("book", '{"amount":305}', "c3"),
            result('{"reservation_id": "HATHAT"}', "c3"),
        )
    )
    assert kinds(trace) == [
        ("tool_call", "book"),
        ("observation", None),
        ("tool_call", "calculate"),
        ("observation", None),
        ("error_recovery", "book"),
        ("observation", None),
    ]
    assert trace["steps"][4]["input"] == '{"amount":305}'


def test_a_retry_that_fails_again_and_is_retried_gives_two_recoveries() -> None:
    trace = only_trace(
        record(
            call("pay", "{}", "a"),
            result("Error: declined", "a"),
            call("pay", "{}", "b"),
            result("ERROR card expired", "b"),
            call("pay", "{}", "c"),
            result("ok", "c"),
        )
    )
    assert [kind for kind, _ in kinds(trace)] == [
        "tool_call",
        "observation",
        "error_recovery",
        "observation",
        "error_recovery",
        "observation",
    ]


def test_only_the_next_call_of_the_same_tool_is_the_retry() -> None:
    trace = only_trace(
        record(
            call("pay", "{}", "a"),
            result("Error: declined", "a"),
            call("search", "{}", "b"),
            result("[]", "b"),
            call("pay", "{}", "c"),
            result("ok", "c"),
            call("pay", "{}", "d"),
            result("ok", "d"),
        )
    )
    assert [kind for kind, _ in kinds(trace)][::2] == [
        "tool_call",
        "tool_call",
        "error_recovery",
        "tool_call",
    ]


def test_an_error_that_is_never_retried_stays_an_observation() -> None:
    trace = only_trace(
        record(call("pay", "{}", "a"), result("Error: declined", "a"), say("Sorry, it failed."))
    )
    assert [kind for kind, _ in kinds(trace)] == ["tool_call", "observation", "thought"]


def test_retries_further_than_the_window_are_plain_calls() -> None:
    others = [m for i in range(4) for m in (call(f"t{i}", "{}", f"o{i}"), result("fine", f"o{i}"))]
    value = record(
        call("pay", "{}", "a"),
        result("Error: declined", "a"),
        *others,
        call("pay", "{}", "z"),
        result("ok", "z"),
    )
    assert kinds(only_trace(value))[-2] == ("tool_call", "pay")
    assert kinds(only_trace(value, retry_window=4))[-2] == ("error_recovery", "pay")
    assert kinds(only_trace(value, retry_window=None))[-2] == ("error_recovery", "pay")
    assert kinds(only_trace(value, retry_window=3))[-2] == ("tool_call", "pay")


def test_the_error_pattern_decides_what_is_an_error() -> None:
    value = record(
        call("pay", "{}", "a"),
        result("No errors found; declined", "a"),
        call("pay", "{}", "b"),
        result('{"error": "declined"}', "b"),
        call("pay", "{}", "c"),
        result("ok", "c"),
    )
    # "No errors found" does not start with the word; a JSON error field that is set is one.
    assert [kind for kind, _ in kinds(only_trace(value))][::2] == [
        "tool_call",
        "tool_call",
        "error_recovery",
    ]


def test_a_json_error_field_that_is_empty_is_not_an_error_whatever_the_pattern() -> None:
    value = record(
        call("pay", "{}", "a"),
        result('{"error": "", "response": "HTTP 400"}', "a"),
        call("pay", "{}", "b"),
        result("ok", "b"),
    )
    for pattern in (r"(?i)^\s*error\b", r'"error"\s*:'):
        assert "error_recovery" not in [
            kind for kind, _ in kinds(only_trace(value, error_pattern=pattern))
        ]


@pytest.mark.parametrize(
    ("fields", "expression", "expected"),
    [
        ({"reward": 1.0}, "reward == 1", True),
        ({"reward": 0.0}, "reward == 1", False),
        ({"reward": 1}, "reward == 1", True),
        ({"reward": 0.6}, "reward >= 0.5", True),
        ({"reward": 0.4}, "reward > 0.5", False),
        ({"info": {"passed": True}}, "info.passed", True),
        ({"info": {"passed": False}}, "info.passed", False),
        ({"status": "done"}, 'status == "done"', True),
        ({"status": "done"}, 'status != "done"', False),
    ],
)
def test_success_comes_from_the_configured_expression(
    fields: dict[str, Any], expression: str, expected: bool
) -> None:
    value = record(say("ok")) | fields
    assert only_trace(value, success=expression)["metadata"]["success"] is expected


@pytest.mark.parametrize(
    ("fields", "expression", "says"),
    [
        ({"reward": "1"}, "reward == 1", "reward is str '1'"),
        ({"reward": True}, "reward == 1", "compares it with int"),
        ({"passed": 1}, "passed", "must be true or false"),
        (
            {"reward": float("nan")},
            "reward == 1",
            "reward is nan; a success value must be a finite number",
        ),
    ],
)
def test_a_success_value_that_cannot_be_evaluated_is_rejected(
    fields: dict[str, Any], expression: str, says: str
) -> None:
    value = {key: item for key, item in record(say("ok")).items() if key != "reward"} | fields
    rule, reason = rejected(value, success=expression)
    assert rule == "invalid_success" and says in reason


@pytest.mark.parametrize(
    ("fields", "expression"), [({"reward": None}, "reward == 1"), ({"info": {}}, "info.passed")]
)
def test_a_record_without_a_success_value_has_an_unknown_outcome(
    fields: dict[str, Any], expression: str
) -> None:
    value = {key: item for key, item in record(say("ok")).items() if key != "reward"} | fields
    metadata = only_trace(value, success=expression)["metadata"]
    assert (metadata["success"], metadata["outcome_unknown"]) == (None, True)


def test_confidence_comes_from_a_field_or_the_default() -> None:
    value = record(say("ok"), meta={"confidence": 0.25})
    assert only_trace(value)["outcome"]["confidence"] == 1.0
    assert only_trace(value, default_confidence=0.6)["outcome"]["confidence"] == 0.6
    assert only_trace(value, confidence_field="meta.confidence")["outcome"]["confidence"] == 0.25
    for bad in (1.5, -0.1, True, "0.9", None):
        rule, reason = rejected(
            record(say("ok"), meta={"confidence": bad}), confidence_field="meta.confidence"
        )
        assert rule == "invalid_confidence" and "[0, 1]" in reason


def test_created_at_is_base_time_plus_the_record_order() -> None:
    out = mapped(
        record(say("a"), trial=0),
        record(say("b"), trial=1),
        record(say("c"), trial=2),
        base_time="2024-05-15T15:00:00-05:00",
        time_step_seconds=60,
    )
    assert [trace["metadata"]["created_at"] for trace in out.traces] == [
        datetime(2024, 5, 15, 20, 0, tzinfo=UTC),
        datetime(2024, 5, 15, 20, 1, tzinfo=UTC),
        datetime(2024, 5, 15, 20, 2, tzinfo=UTC),
    ]
    default = mapped(record(say("a")))
    assert default.traces[0]["metadata"]["created_at"] == datetime(1970, 1, 1, tzinfo=UTC)


def test_a_rejected_record_keeps_the_later_records_times() -> None:
    out = mapped(record(say("a"), trial=0), {"broken": True}, record(say("c"), trial=2))
    assert [trace["metadata"]["created_at"].second for trace in out.traces] == [0, 2]


def test_created_at_from_a_field_is_converted_to_utc() -> None:
    config = {"created_at_field": "started"}
    aware = only_trace(record(say("a"), started="2024-05-01T21:00:00+09:00"), **config)
    naive = only_trace(record(say("a"), started="2024-05-01T12:00:00"), **config)
    assert (
        aware["metadata"]["created_at"]
        == naive["metadata"]["created_at"]
        == datetime(2024, 5, 1, 12, tzinfo=UTC)
    )
    for bad in ("yesterday", 1714564800, None):
        rule, reason = rejected(record(say("a"), started=bad), **config)
        assert rule == "invalid_created_at" and "ISO-8601" in reason


def test_agent_id_and_domain_come_from_configuration_or_fields() -> None:
    value = record(say("a"), agent={"name": "bot-7"})
    metadata = only_trace(value, agent_id="fleet", task_domain="customer_service")["metadata"]
    assert (metadata["agent_id"], metadata["task_domain"]) == ("fleet", "customer_service")
    metadata = only_trace(
        value, agent_id="fleet", agent_id_field="agent.name", task_domain_field="agent.domain"
    )["metadata"]
    assert (metadata["agent_id"], metadata["task_domain"]) == ("bot-7", None)
    rule, reason = rejected(record(say("a"), agent={"name": 7}), agent_id_field="agent.name")
    assert rule == "malformed_record" and "agent id field agent.name is int" in reason


def test_trace_ids_are_deterministic_and_follow_the_id_fields() -> None:
    first = only_trace(record(say("a")))["id"]
    assert first == only_trace(record(say("a")))["id"]
    assert first.startswith("kp:trace:") and len(first) == len("kp:trace:") + 36
    assert only_trace(record(say("changed"), reward=0))["id"] == first
    assert only_trace(record(say("a"), trial=1))["id"] != first
    assert only_trace(record(say("a")), agent_id="other")["id"] != first
    by_content = only_trace(record(say("a")), id_fields=[])["id"]
    assert by_content == only_trace(record(say("a")), id_fields=[])["id"] != first
    assert only_trace(record(say("b")), id_fields=[])["id"] != by_content


def test_a_missing_id_field_is_rejected() -> None:
    value = {key: item for key, item in record(say("a")).items() if key != "trial"}
    rule, reason = rejected(value)
    assert rule == "missing_id" and "trial" in reason


def test_duplicate_ids_keep_the_last_record() -> None:
    out = mapped(record(say("a")), record(say("a")), record(say("b")))
    assert out.record_numbers == [3]
    assert [(r.record_number, r.rule) for r in out.rejections] == [
        (1, "duplicate_id"),
        (2, "duplicate_id"),
    ]
    assert (
        "record 2" in out.rejections[0].reason
        and "(apart from the event time) is identical" in out.rejections[0].reason
    )
    assert (
        "record 3" in out.rejections[1].reason
        and "(apart from the event time) is different" in out.rejections[1].reason
    )
    assert out.rejections[0].key == "[7,0]" and out.rejections[0].trace_id == out.traces[0]["id"]


def test_unknown_roles_are_rejected_naming_the_message() -> None:
    rule, reason = rejected(record(say("a"), {"role": "critic", "content": "x"}))
    assert rule == "unknown_role" and "message 4 has role 'critic'" in reason


def test_a_legacy_function_result_without_its_call_is_rejected_naming_it() -> None:
    rule, reason = rejected(record(say("a"), {"role": "function", "name": "f", "content": "x"}))
    assert rule == "unmatched_tool_message" and "tool_call_id 'function f'" in reason


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ([result("orphan", "c9")], "tool_call_id 'c9'"),
        ([call("pay", "{}", "c1"), result("ok", "c1"), result("again", "c1")], "already answered"),
        ([call("pay", "{}", None), result("ok", "c1")], "tool_call_id 'c1'"),
        ([call("pay", "{}", "c1"), result("ok", None)], "tool_call_id None"),
    ],
)
def test_tool_messages_without_a_matching_call_are_rejected(
    messages: list[dict[str, Any]], says: str
) -> None:
    rule, reason = rejected(record(say("a"), *messages))
    assert rule == "unmatched_tool_message" and says in reason


def test_a_call_id_may_be_reused_once_answered() -> None:
    trace = only_trace(
        record(call("a", "{}", "x"), result("1", "x"), call("b", "{}", "x"), result("2", "x"))
    )
    assert [kind for kind, _ in kinds(trace)] == [
        "tool_call",
        "observation",
        "tool_call",
        "observation",
    ]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ({"task_id": 1, "trial": 0, "reward": 1, "traj": []}, "no messages"),
        (
            {"task_id": 1, "trial": 0, "reward": 1, "traj": [SYSTEM, USER]},
            "2 messages but no assistant message",
        ),
    ],
)
def test_empty_trajectories_are_rejected(value: dict[str, Any], says: str) -> None:
    rule, reason = rejected(value)
    assert rule == "empty_trajectory" and says in reason


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (["not", "messages"], "the record is list"),  # a list of messages is one (below)
        ({"task_id": 1, "trial": 0, "reward": 1}, "'traj' is missing"),
        ({"task_id": 1, "trial": 0, "reward": 1, "traj": "hello"}, "'traj' is str"),
        (record("not a message"), "message 3 is str"),
        (record({"content": "no role"}), "message 3 has role None"),
        (record({"role": "assistant", "content": 42}), "content is int 42"),
        (record({"role": "assistant", "content": ["x"]}), "content part is str"),
        (
            record({"role": "assistant", "content": None, "tool_calls": {"id": "x"}}),
            "tool_calls is dict",
        ),
        (
            record(
                {"role": "assistant", "content": None, "tool_calls": [{"id": "x", "function": {}}]}
            ),
            "tool call 1: no function.name",
        ),
        (record(call("pay", 12)), "function.arguments is int"),
        (record(call("pay", "{}", 5)), "id is int"),  # type: ignore[arg-type]
    ],
)
def test_malformed_records_are_rejected_with_the_place(value: Any, says: str) -> None:
    rule, reason = rejected(value)
    assert rule == "malformed_record" and says in reason


def test_a_record_the_reader_could_not_parse_is_reported_and_the_others_map() -> None:
    rows = [ChatRecord(1, 0, None, "line 1 is not valid JSON"), ChatRecord(2, 1, record(say("a")))]
    out = map_trajectories(rows, ChatImportConfig())
    assert out.record_numbers == [2]
    assert [(r.record_number, r.rule, r.reason) for r in out.rejections] == [
        (1, "malformed_record", "line 1 is not valid JSON")
    ]


def test_the_first_problem_in_message_order_decides() -> None:
    rule, _ = rejected(record(result("orphan", "zz"), {"role": "robot"}))
    assert rule == "unmatched_tool_message"
    rule, _ = rejected(record({"role": "robot"}, result("orphan", "zz")) | {"reward": None})
    assert rule == "unknown_role"


def test_the_mapping_does_not_modify_its_input() -> None:
    value = record(
        call("pay", {"b": 1}, "a"),
        result("Error: x", "a"),
        call("pay", "{}", "b"),
        result("ok", "b"),
    )
    before = json.dumps(value, sort_keys=True)
    mapped(value)
    assert json.dumps(value, sort_keys=True) == before


def test_record_rules_are_checked_in_the_documented_order() -> None:
    config = {"confidence_field": "c", "created_at_field": "t"}
    base = record(say("a"), c=2.0, t="never")
    assert rejected(base | {"reward": "x"}, **config)[0] == "invalid_success"
    assert rejected(base, **config)[0] == "invalid_confidence"
    assert rejected(base | {"c": 0.5}, **config)[0] == "invalid_created_at"
    assert rejected(base | {"trial": None, "reward": "x"}, **config)[0] == "missing_id"
    assert (
        rejected(record(say("a"), agent=3) | {"traj": "x"}, agent_id_field="agent")[0]
        == "malformed_record"
    )
    malformed_agent = record({"role": "robot"}, agent=3)
    assert rejected(malformed_agent, agent_id_field="agent")[1].startswith(
        "agent id field agent is int"
    )


def test_times_outside_the_datetime_range_are_rejected_not_raised() -> None:
    rule, _ = rejected(record(say("a"), t="0001-01-01T00:00:00+05:00"), created_at_field="t")
    assert rule == "invalid_created_at"
    far = mapped(
        record(say("a"), trial=0), record(say("b"), trial=1), base_time="9999-12-31T23:59:59Z"
    )
    assert far.record_numbers == [1] and far.rejections[0].rule == "invalid_created_at"
    assert "past year 9999" in far.rejections[0].reason


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system", "robot", 3])},
    optional={
        "content": _JSON | st.text(max_size=10) | st.sampled_from(["Error: no", "ok"]),
        "tool_call_id": st.sampled_from(["a", "b", None, 1]),
        "tool_calls": st.lists(
            st.fixed_dictionaries(
                {
                    "id": st.sampled_from(["a", "b", None]),
                    "function": st.fixed_dictionaries(
                        {"name": st.sampled_from(["f", "g", "", None]), "arguments": _JSON}
                    ),
                }
            ),
            max_size=2,
        )
        | _JSON,
    },
)
_RECORD = st.fixed_dictionaries(
    {
        "task_id": st.integers(0, 2) | st.none(),
        "trial": st.integers(0, 1),
        "reward": st.sampled_from([0, 1, 1.0, "1", None, True, float("nan")]),
        "traj": st.lists(_MESSAGE | _JSON, max_size=6) | _JSON,
        "t": st.text(max_size=30)
        | st.sampled_from(["2024-05-01T12:00:00Z", "0001-01-01T00:00:00+01:00"]),
        "c": _JSON,
    }
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_RECORD | _JSON, max_size=5), st.booleans())
def test_any_input_maps_without_raising_and_every_record_is_accounted_for(
    values: list[Any], fields: bool
) -> None:
    config = (
        {"created_at_field": "t", "confidence_field": "c", "retry_window": None} if fields else {}
    )
    out = mapped(*values, **config)
    assert len(out.traces) + len(out.rejections) == len(values)
    assert sorted(out.record_numbers + [r.record_number for r in out.rejections]) == list(
        range(1, len(values) + 1)
    )
    for trace in out.traces:
        assert [step["step_id"] for step in trace["steps"]] == list(range(len(trace["steps"])))
        assert {step["type"] for step in trace["steps"]} <= {
            "thought",
            "tool_call",
            "observation",
            "error_recovery",
        }
