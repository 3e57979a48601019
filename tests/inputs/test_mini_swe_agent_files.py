"""mini-swe-agent trajectories as mini-swe-agent writes them (tests/data/SOURCES.md: a SWE-bench
Verified run of mini-swe-agent 1.15 with gemini-3-pro-preview) score with no flag: the task
is the objective, each command in a fenced block a call of `bash` with its output the result,
the submission the answer, the model the agent, the outcome unknown. The expectations are read
from the file here with `json` and string splits, not with the code under test. The shapes of
mini-swe-agent 2.0 (commands in `extra.actions`; a tool-calling model's `tool_calls` and tool
messages; the closing `exit` message), built from the same run, read to the same calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import query_rows

from storage.inputs.formats import AutoFormat
from tracegrade.cli import main

DATA = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "mini-swe-agent"
    / "django__django-10999.traj.json"
)

_TRACE = (
    "SELECT objective, result_summary, agent_id, success, "
    "list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
    "  s -> [s.tool_name, s.input]), "
    "list_transform(list_filter(steps, s -> s.type = 'observation'), s -> s.content), "
    "list_transform(steps, s -> s.type) FROM traces"
)


def _command(content: str) -> str:
    return content.split("```bash\n", 1)[1].split("\n```", 1)[0]


def _expected(run: dict[str, Any]) -> tuple[Any, ...]:
    messages = run["messages"]
    turns = messages[2:]  # after the system prompt and the task
    commands = [_command(m["content"]) for m in turns if m["role"] == "assistant"]
    outputs = [m["content"] for m in turns if m["role"] == "user"]
    calls = [["bash", json.dumps({"command": c}, ensure_ascii=False)] for c in commands]
    return (
        messages[1]["content"],
        run["info"]["submission"],
        run["info"]["config"]["model"]["model_name"],
        None,
        calls,
        outputs,
    )


def _score(path: Path, tmp_path: Path) -> tuple[Any, ...]:
    db = tmp_path / f"{path.stem}.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT status, rows_read FROM files") == [("loaded", 1)]
    ((*row, kinds),) = query_rows(db, _TRACE)
    return (*row, kinds)


def test_a_trajectory_is_one_trace_as_its_messages_say(tmp_path: Path) -> None:
    run = json.loads(DATA.read_text())
    path = tmp_path / DATA.name
    path.write_bytes(DATA.read_bytes())
    *got, kinds = _score(path, tmp_path)
    expected = _expected(run)
    assert tuple(got) == expected
    assert len(expected[4]) == 18 and "error_recovery" not in kinds  # every command exited 0
    # the submission is the answer, not a thought after the last result as well
    assert kinds[-1] == "observation"


def test_a_command_that_exits_non_zero_is_a_failed_call(tmp_path: Path) -> None:
    run = json.loads(DATA.read_text())
    messages = run["messages"]
    first_output = next(i for i, m in enumerate(messages) if i > 2 and m["role"] == "user")
    failed = messages[first_output]["content"].replace(
        "<returncode>0</returncode>", "<returncode>2</returncode>"
    )
    messages[first_output]["content"] = failed
    path = tmp_path / "failed.traj.json"
    path.write_text(json.dumps(run))
    *_, observations, kinds = _score(path, tmp_path)
    assert json.loads(observations[0]) == {"error": failed}
    assert kinds.count("error_recovery") == 1  # the next command, bash again, retries it


def test_the_shapes_of_mini_swe_agent_2_read_to_the_same_calls(tmp_path: Path) -> None:
    run = json.loads(DATA.read_text())
    expected = _expected(run)
    task, turns = run["messages"][:2], run["messages"][2:]
    actions, tools = [], []
    for number, message in enumerate(turns):
        if message["role"] == "assistant":
            command = _command(message["content"])
            actions.append({**message, "extra": {"actions": [{"command": command}]}})
            call = {"name": "bash", "arguments": json.dumps({"command": command})}
            tools.append(
                {
                    "role": "assistant",
                    "content": message["content"].split("```bash", 1)[0].strip(),
                    "tool_calls": [{"id": f"c{number}", "type": "function", "function": call}],
                }
            )
        else:
            actions.append(message)
            tools.append(
                {"role": "tool", "tool_call_id": f"c{number - 1}", "content": message["content"]}
            )
    closing = {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}}
    for name, messages in (("actions", actions), ("tools", tools)):
        document = {**run, "messages": [*task, *messages, closing]}
        document["trajectory_format"] = "mini-swe-agent-1.1"
        path = tmp_path / f"{name}.traj.json"
        path.write_text(json.dumps(document))
        *got, _ = _score(path, tmp_path)
        assert tuple(got) == expected, name


def test_a_trajectory_too_large_to_peek_whole_is_recognised(tmp_path: Path) -> None:
    run = json.loads(DATA.read_text())
    run["messages"][3]["content"] += "x" * (9 << 20)  # a command that printed 9 MB
    path = tmp_path / "large.traj.json"
    path.write_text(json.dumps(run))
    assert AutoFormat().chosen(path).name == "mini-swe-agent"  # type: ignore[union-attr]


def test_a_reply_with_two_commands_ran_nothing_and_its_format_error_is_no_step(
    tmp_path: Path,
) -> None:
    # another run of the same submission: two replies hold two fenced commands each, which
    # mini-swe-agent does not run; it writes back its format error instead
    data = DATA.with_name("django__django-11066.traj.json")
    run = json.loads(data.read_text())
    turns = run["messages"][2:]
    ran = [
        (m, turns[i + 1])
        for i, m in enumerate(turns)
        if m["role"] == "assistant" and m["content"].count("```bash\n") == 1
    ]
    notes = [m for m in turns if m["content"].startswith("Please always provide EXACTLY ONE")]
    assert len(notes) == 2 and len(ran) == 17
    path = tmp_path / data.name
    path.write_bytes(data.read_bytes())
    objective, answer, agent, success, calls, observations, kinds = _score(path, tmp_path)
    assert calls == [
        ["bash", json.dumps({"command": _command(m["content"])}, ensure_ascii=False)]
        for m, _ in ran
    ]
    outputs = [output["content"] for _, output in ran]
    failed = [o for o in outputs if o.split("</returncode>")[0] not in ("<returncode>0", o)]
    assert observations == [json.dumps({"error": o}) if o in failed else o for o in outputs]
    assert failed and kinds.count("error_recovery") == len(failed)
    assert not any(note["content"] in observations for note in notes)
    # every reply is a thought, those that ran nothing too
    replies = [m for m in turns if m["role"] == "assistant"]
    assert kinds.count("thought") == len(replies) == 19
    # a reply that ran nothing keeps the commands it proposed in its thought
    ((thoughts,),) = query_rows(
        tmp_path / f"{path.stem}.duckdb",
        "SELECT list_transform(list_filter(steps, s -> s.type = 'thought'), s -> s.content) "
        "FROM traces",
    )
    unrun = [m["content"].strip() for m in replies if m["content"].count("```bash\n") == 2]
    assert len(unrun) == 2 and all(reply in thoughts for reply in unrun)
    assert (objective, answer, agent, success) == (
        run["messages"][1]["content"],
        run["info"]["submission"],
        run["info"]["config"]["model"]["model_name"],
        None,
    )


def test_a_run_that_submitted_nothing_answered_nothing(tmp_path: Path) -> None:
    run = json.loads(DATA.read_text())
    run["info"]["submission"] = ""
    run["info"]["exit_status"] = "LimitsExceeded"
    path = tmp_path / "limits.traj.json"
    path.write_text(json.dumps(run))
    _, answer, *_ = _score(path, tmp_path)
    assert answer == ""  # not the last reply's thought
