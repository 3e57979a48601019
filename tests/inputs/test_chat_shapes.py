"""Chat messages as other tools write them (transforms/_chat_shapes.py): legacy function
calls, JSON error fields, the answer of a final-answer tool."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import query_rows

from tracegrade.cli import main
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


def _trajectory(anthropic: bool) -> list[dict[str, object]]:
    """One run, in Anthropic's Messages API shape or OpenAI's: a tool call that fails, its
    retry, then the answer; Anthropic's user turn carries the results (and a remark)."""
    task = {"role": "user", "content": "What is the weather in Oslo?"}
    if anthropic:
        return [
            task,
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Look it up."},
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "weather",
                        "input": {"city": "Oslo"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": "timeout",
                        "is_error": True,
                    }
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_2",
                        "name": "weather",
                        "input": {"city": "Oslo"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": [{"type": "text", "text": "4 C, rain"}],
                    },
                    {"type": "text", "text": "Thanks."},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "It is 4 C and raining."}]},
        ]
    call = {"type": "function", "function": {"name": "weather", "arguments": {"city": "Oslo"}}}
    return [
        task,
        {"role": "assistant", "content": "Checking.", "tool_calls": [{**call, "id": "toolu_1"}]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "timeout", "is_error": True},
        {"role": "assistant", "content": None, "tool_calls": [{**call, "id": "toolu_2"}]},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "4 C, rain"},
        {"role": "user", "content": "Thanks."},
        {"role": "assistant", "content": "It is 4 C and raining."},
    ]


def test_anthropic_content_blocks_read_as_the_same_run_in_openai_s_shape(tmp_path: Path) -> None:
    """`tool_use` blocks are tool calls and `tool_result` blocks their results (`is_error`
    a failure, its retry error recovery); the trace is the one the OpenAI-shaped run gives."""
    rows = []
    for anthropic in (True, False):
        export = tmp_path / f"run-{anthropic}.jsonl"
        record = {"task_id": 7, "trial": 0, "reward": 1, "traj": _trajectory(anthropic)}
        export.write_text(json.dumps(record) + "\n")
        db = tmp_path / f"{anthropic}.duckdb"
        assert main(["score", str(export), "--db", str(db), "--no-embedder"]) == 0
        rows.append(
            query_rows(
                db,
                "SELECT objective, result_summary, success, "
                "list_transform(steps, s -> [s.type, s.tool_name, s.input, s.content]) FROM traces",
            )
        )
    blocks, openai = rows
    assert blocks == openai
    ((objective, answer, success, steps),) = blocks
    assert (objective, answer, success) == (
        "What is the weather in Oslo?",
        "It is 4 C and raining.",
        True,
    )
    assert [step[0] for step in steps] == [
        "thought",
        "tool_call",
        "observation",
        "error_recovery",
        "observation",
        "thought",
    ]
