"""Claude Code transcripts as Claude Code writes them (tests/data/SOURCES.md: three sessions
of Claude Code 2.0.64 to 2.1.39 and a subagent's file, from two public repositories) score with no format flag: each session
is one trace, the first prompt the user typed its objective, the last assistant text its
answer, the tool calls in order, the results flagged `is_error` failed calls that the levels
count, the model the agent, the outcome unknown. Expectations are read from the raw events
here, not with the code under test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "claude-code"
TRACE_SQL = (
    "SELECT regexp_extract(source_file, '[^/]+$'), objective, result_summary, agent_id, "
    "success, list_transform(list_filter(steps, s -> s.type IN ('tool_call', 'error_recovery')), "
    "  s -> s.tool_name), "
    "len(list_filter(steps, s -> s.type = 'observation' AND s.content LIKE '{\"error\":%')), "
    "trace_id FROM traces ORDER BY 1"
)
FAILED_SQL = (
    "SELECT count(*) FILTER (WHERE step_kind = 'tool_call' AND tool_success_rate = 0) "
    "FROM confidence_steps c JOIN traces t USING (trace_id) "
    "WHERE regexp_extract(t.source_file, '[^/]+$') = '{name}'"
)


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _blocks(event: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    content = event["message"]["content"]
    return [b for b in content if b.get("type") == kind] if isinstance(content, list) else []


def _expected(events: list[dict[str, Any]]) -> tuple[Any, ...]:
    said = [e for e in events if e.get("type") in ("user", "assistant")]
    prompts = [
        e["message"]["content"]
        for e in said
        if e["type"] == "user"
        and isinstance(e["message"]["content"], str)
        and not e.get("isMeta")
        and not e["message"]["content"].lstrip().startswith("<")
    ]
    texts = [b["text"] for e in said if e["type"] == "assistant" for b in _blocks(e, "text")]
    calls = [b["name"] for e in said if e["type"] == "assistant" for b in _blocks(e, "tool_use")]
    failed = [b for e in said if e["type"] == "user" for b in _blocks(e, "tool_result")]
    model = next(e["message"]["model"] for e in said if e["type"] == "assistant")
    answer = [text for text in texts if text.strip()][-1]
    errors = sum(1 for b in failed if b.get("is_error") is True)
    return prompts[0], answer, model, None, calls, errors


def test_each_transcript_is_one_trace_as_written(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    shutil.copytree(DATA, folder)
    db = tmp_path / "c.duckdb"
    assert main(["score", str(folder), "--db", str(db), "--no-embedder"]) == 0
    rows = query_rows(db, TRACE_SQL)
    assert [row[0] for row in rows] == sorted(path.name for path in DATA.iterdir())
    for name, objective, answer, agent, success, calls, errors, _ in rows:
        expected = _expected(_events(DATA / name))
        assert (objective, answer, agent, success, calls, errors) == expected, name
        # every failed call is one the levels count as failed (none retried alike here)
        ((counted,),) = query_rows(db, FAILED_SQL.format(name=name))
        assert counted == expected[-1], name
    failed = {row[0]: row[6] for row in rows}
    assert failed["short.jsonl"] == 2 and failed["agent-a2898e3.jsonl"] == 8
    levels = dict(
        query_rows(
            db,
            "SELECT regexp_extract(t.source_file, '[^/]+$'), c.level FROM confidence_traces c "
            "JOIN traces t USING (trace_id)",
        )
    )
    # both of its calls refused and the session interrupted: the least calm level
    assert levels["short.jsonl"] == "ESCALATE"


def test_a_subagent_inline_is_a_trace_of_its_own_and_a_bad_line_is_reported(
    tmp_path: Path,
) -> None:
    """Sessions joined into one file are a trace each; a subagent's events (`isSidechain`,
    its `agentId`) are one of their own, as when read from its own file; a line that is not
    JSON is a quarantine row with its line, and the sessions around it still import."""
    lines = (DATA / "tool_heavy.jsonl").read_text().splitlines()
    lines.insert(5, '{"type": "user", "message": ')
    lines += (DATA / "agent-a2898e3.jsonl").read_text().splitlines()
    joined = tmp_path / "joined.jsonl"
    joined.write_text("\n".join(lines) + "\n")
    apart = tmp_path / "apart"
    apart.mkdir()
    for name in ("tool_heavy.jsonl", "agent-a2898e3.jsonl"):
        shutil.copy(DATA / name, apart / name)

    db = tmp_path / "joined.duckdb"
    assert main(["score", str(joined), "--db", str(db), "--no-embedder"]) == 0
    found = sorted(query_rows(db, "SELECT objective, result_summary, trace_id FROM traces"))
    alone = tmp_path / "apart.duckdb"
    assert main(["score", str(apart), "--db", str(alone), "--no-embedder"]) == 0
    assert found == sorted(
        query_rows(alone, "SELECT objective, result_summary, trace_id FROM traces")
    )
    assert len(found) == 2
    ((rule, reason),) = query_rows(db, "SELECT rule, reason FROM quarantine")
    assert rule == "malformed_record" and "line 6" in reason


def test_only_claude_codes_own_lines_is_no_trace_and_never_loaded(tmp_path: Path) -> None:
    """A transcript that holds no conversation (its snapshot and progress lines alone) yields
    no trace: the run says so and exits 1, and the file is not recorded as loaded."""
    own = [
        line
        for line in (DATA / "short.jsonl").read_text().splitlines()
        if json.loads(line)["type"] not in ("user", "assistant")
    ]
    path = tmp_path / "empty-session.jsonl"
    path.write_text("\n".join(own) + "\n")
    db = tmp_path / "e.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 1
    assert query_rows(db, "SELECT count(*) FROM traces") == [(0,)]
    assert query_rows(db, "SELECT status FROM files") != [("loaded",)]


def test_what_claude_code_adds_as_the_users_is_not_the_objective() -> None:
    """Claude Code's own messages in the user's role (a note marked `isMeta`, a local
    command's output, a pasted image alone) are not prompts; a slash command's line is the
    objective only where the session holds no typed prompt."""
    from transforms.claude_code import claude_code_records

    def user(content: object, **extra: object) -> dict[str, object]:
        return {
            "type": "user",
            "sessionId": "s",
            "message": {"role": "user", "content": content},
        } | extra

    command = "<command-name>/review</command-name><command-args>42</command-args>"
    image = [{"type": "image", "source": {"type": "base64", "data": "AA=="}}]
    reply = {
        "type": "assistant",
        "sessionId": "s",
        "message": {"role": "assistant", "content": "ok"},
    }
    events = [
        user("<local-command-caveat>Caveat: ...</local-command-caveat>", isMeta=True),
        user("<local-command-stdout>Reconnected.</local-command-stdout>"),
        user(command),
        user(image),
        user("fix the failing test"),
        reply,
    ]
    ((_, record),) = claude_code_records(events)
    users = [m["content"] for m in record["messages"] if m["role"] == "user"]
    assert users == ["fix the failing test"]
    ((_, only_command),) = claude_code_records([user(command), reply])
    # as typed, not Claude Code's markup of it
    assert [m["content"] for m in only_command["messages"] if m["role"] == "user"] == ["/review 42"]


def test_a_transcript_opening_with_a_title_line_is_recognised(tmp_path: Path) -> None:
    """Claude Code writes some lines of its own with only the session's id (a title it gave
    the session): a transcript opening with one is still a transcript; a record holding a
    list of messages is some other tool's chat trajectory, not Claude Code's."""
    from transforms.claude_code import is_claude_code_event

    session = json.loads((DATA / "short.jsonl").read_text().splitlines()[-1])["sessionId"]
    title = json.dumps({"type": "custom-title", "customTitle": "phoenix", "sessionId": session})
    path = tmp_path / "titled.jsonl"
    path.write_text(title + "\n" + (DATA / "short.jsonl").read_text())
    db = tmp_path / "t.duckdb"
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    ((objective,),) = query_rows(db, "SELECT objective FROM traces")
    assert objective == "mix phx.server doesnt seem to start"
    chat = {"type": "conversation", "sessionId": "s1", "uuid": "u1", "messages": []}
    assert not is_claude_code_event(chat)


OLD = Path(__file__).resolve().parents[1] / "data" / "claude-code-1.0"


def _chains(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """A Claude Code 1.0 transcript's conversations: the session's own events, then each
    subagent's chain (sidechain events from one with no parent), in the file's order."""
    said = [e for e in events if e.get("type") in ("user", "assistant")]
    chains: dict[str, list[dict[str, Any]]] = {"": []}
    root_of: dict[str, str] = {}
    for event in said:
        if not event.get("isSidechain"):
            chains[""].append(event)
            continue
        root = root_of.get(event.get("parentUuid") or "", event["uuid"])
        root_of[event["uuid"]] = root
        chains.setdefault(root, []).append(event)
    return list(chains.values())


def test_claude_code_1_0_subagents_and_slash_commands_read_as_typed(tmp_path: Path) -> None:
    """Claude Code 1.0.98 and 1.0.108 (tests/data/claude-code-1.0): a session opened by a
    slash command has the command as typed as its objective (`/init`, not Claude Code's
    `<command-message>` markup), and the subagents that 1.0 wrote into the session's own file
    (`isSidechain`, no `agentId`) are a trace each (before, both were one trace with the first
    one's task)."""
    folder = tmp_path / "sessions"
    shutil.copytree(OLD, folder)
    db = tmp_path / "old.duckdb"
    assert main(["score", str(folder), "--db", str(db), "--no-embedder"]) == 0
    assert query_rows(db, "SELECT count(*) FROM quarantine") == [(0,)]
    rows = query_rows(db, TRACE_SQL.replace("ORDER BY 1", "ORDER BY 1, row_number"))
    expected = []
    for path in sorted(OLD.iterdir()):
        for chain in _chains(_events(path)):
            first = chain[0]["message"]["content"]
            task = first if isinstance(first, str) else first[0]["text"]
            if task.startswith("<command-message>"):
                name = task.split("<command-name>")[1].split("</command-name>")[0]
                args = (
                    task.split("<command-args>")[1].split("</command-args>")[0]
                    if "<command-args>" in task
                    else ""
                )
                task = f"{name} {args}".strip()
            texts = [
                b["text"] for e in chain if e["type"] == "assistant" for b in _blocks(e, "text")
            ]
            calls = [
                b["name"] for e in chain if e["type"] == "assistant" for b in _blocks(e, "tool_use")
            ]
            results = [b for e in chain if e["type"] == "user" for b in _blocks(e, "tool_result")]
            errors = sum(1 for b in results if b.get("is_error") is True)
            model = next(e["message"]["model"] for e in chain if e["type"] == "assistant")
            answer = [text for text in texts if text.strip()][-1]
            expected.append((path.name, task, answer, model, None, calls, errors))
    assert [row[:7] for row in rows] == expected
    assert [row[1] for row in rows][:2] == [
        "/init",
        "/orchestrator @CLAUDE.md を最新の状態にアップデートしてください",
    ]
