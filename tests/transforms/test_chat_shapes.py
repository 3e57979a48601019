"""Chat messages as other tools write them (transforms/_chat_shapes.py): legacy function
calls, JSON error fields, the answer of a final-answer tool."""

from __future__ import annotations

import re

from transforms._chat_shapes import final_answer, is_error_result, with_tool_calls

DEFAULT = re.compile(r"(?i)^\s*error\b")


def test_legacy_function_calls_become_tool_calls_answered_in_order() -> None:
    messages = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": None, "function_call": {"name": "a", "arguments": "{}"}},
        {"role": "assistant", "content": "t", "function_call": {"name": "a", "arguments": "{}"}},
        {"role": "function", "name": "a", "content": "first"},
        {"role": "function", "name": "a", "content": "second"},
        {"role": "function", "name": "b", "content": "nobody asked"},
    ]
    written = with_tool_calls(messages)
    assert [m["tool_calls"][0]["id"] for m in written[1:3]] == ["function-1", "function-2"]
    assert written[1]["tool_calls"][0]["function"] == {"name": "a", "arguments": "{}"}
    assert [(m["role"], m["tool_call_id"], m["content"]) for m in written[3:]] == [
        ("tool", "function-1", "first"),
        ("tool", "function-2", "second"),
        ("tool", "function b", "nobody asked"),  # the mapping rejects it as unmatched
    ]
    current = [{"role": "assistant", "tool_calls": []}]
    assert with_tool_calls(current) is current


def test_a_json_result_is_an_error_only_when_its_error_field_says_so() -> None:
    assert not is_error_result('{"error": "", "response": "HTTP 400"}', DEFAULT)
    assert is_error_result('{"error": "Message error...", "response": ""}', DEFAULT)
    assert not is_error_result('{"error": null}', DEFAULT)
    # ToolBench cuts long results: the field that opens them still decides.
    assert is_error_result('{"error": "Timeout", "response": "{\'a\': [1, 2', DEFAULT)
    assert not is_error_result('{"error": "", "response": "{\'a\': [1, 2', DEFAULT)
    assert is_error_result("Error: no such file", DEFAULT)
    assert not is_error_result('{"result": "error-free"}', DEFAULT)


def test_the_answer_of_a_final_answer_tool() -> None:
    assert final_answer('{"return_type": "give_answer", "final_answer": "Paris"}') == "Paris"
    assert final_answer('{"return_type": "give_up_and_restart"}') == ""
    assert final_answer('{"answer": {"steps": [1]}}') == '{"steps": [1]}'
    assert final_answer("plain text") == "plain text"
    assert final_answer(None) == ""
