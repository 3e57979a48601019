"""Google ADK sessions (tests/data/adk: two of google/adk-samples' example sessions, as ADK's
Session model writes them) score with no format flag: each session one trace, its first user
text the objective, each function call a call answered by its function response (by id, or
by tool where the session keeps no ids), the agent's last text the answer, the app the agent,
the first event's time the trace's. The same session written with the model's aliases
(camelCase, as `adk web`'s API returns it) is the same trace. Expectations are read from the
raw files here."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import query_rows

from tracegrade.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "adk"
SESSIONS = sorted(DATA.glob("*.session.json"))


def _parts(event: dict[str, Any]) -> list[dict[str, Any]]:
    return list((event.get("content") or {}).get("parts") or [])


def _expected(session: dict[str, Any]) -> tuple[Any, ...]:
    events = session["events"]
    said = [(event["author"], part) for event in events for part in _parts(event)]
    users = [part["text"] for author, part in said if author == "user" and "text" in part]
    texts = [part["text"] for author, part in said if author != "user" and "text" in part]
    calls = [part["function_call"]["name"] for _, part in said if "function_call" in part]
    results = [part["function_response"] for _, part in said if "function_response" in part]
    started = datetime.fromtimestamp(events[0]["timestamp"], UTC)
    return session["app_name"], started, users[0], texts[-1], calls, len(results)


def _score(path: Path, db: Path) -> list[tuple[Any, ...]]:
    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
    return query_rows(
        db,
        "SELECT agent_id, created_at, objective, result_summary, "
        "list_transform(list_filter(steps, s -> s.type = 'tool_call'), s -> s.tool_name), "
        "len(list_filter(steps, s -> s.type = 'observation' AND s.content <> '')), success "
        "FROM traces",
    )


@pytest.mark.parametrize("path", SESSIONS, ids=[path.name for path in SESSIONS])
def test_a_session_is_one_trace_with_its_calls_answered(path: Path, tmp_path: Path) -> None:
    session = json.loads(path.read_text())

    found = _score(path, tmp_path / "a.duckdb")

    app, started, objective, answer, calls, results = _expected(session)
    assert len(found) == 1
    row = found[0]
    assert (row[0], row[1], row[2], row[3]) == (app, started, objective, answer)
    # every call in the session's order, each with the result its response carried
    assert row[4] == calls and len(calls) == results == row[5]
    assert row[6] is None  # a session records no outcome


def _camel(name: str) -> str:
    return re.sub(r"_([a-z])", lambda match: match.group(1).upper(), name)


def _aliased(value: Any) -> Any:
    """The session as ADK's model writes it with its aliases: every key in camelCase (tool
    arguments and responses are the tools' own and stay as they are)."""
    if isinstance(value, list):
        return [_aliased(item) for item in value]
    if not isinstance(value, dict):
        return value
    return {
        _camel(key): item if key in ("args", "response", "state_delta", "state") else _aliased(item)
        for key, item in value.items()
    }


def test_a_session_written_with_its_aliases_is_the_same_trace(tmp_path: Path) -> None:
    path = DATA / "text_search_floral_dress.session.json"
    aliased = tmp_path / "camel.json"
    aliased.write_text(json.dumps(_aliased(json.loads(path.read_text()))))
    assert "functionCall" in aliased.read_text() and "appName" in aliased.read_text()

    assert _score(aliased, tmp_path / "b.duckdb") == _score(path, tmp_path / "a.duckdb")


EVAL_RESULTS = sorted(DATA.glob("trpc-agent-go-*/*.evalset_result.json"))


def _document(path: Path) -> dict[str, Any]:
    """An eval result's document: ADK 1.x (and tRPC-Agent-Go then) wrote it as a JSON string."""
    document = json.loads(path.read_text())
    parsed: dict[str, Any] = json.loads(document) if isinstance(document, str) else document
    return parsed


def _get(value: dict[str, Any], snake: str) -> Any:
    camel = re.sub(r"_([a-z])", lambda match: match.group(1).upper(), snake)
    return value[snake] if snake in value else value[camel]


def _text(content: dict[str, Any]) -> str:
    if "parts" in content:
        return "".join(part["text"] for part in content["parts"] if "text" in part)
    return str(content["content"])


def _case(case: dict[str, Any]) -> tuple[Any, ...]:
    per = _get(case, "eval_metric_result_per_invocation")
    actual = [_get(entry, "actual_invocation") for entry in per]
    calls = [
        use["name"]
        for invocation in actual
        for use in invocation.get("tools") or _get(invocation, "intermediate_data")["tool_uses"]
    ]
    results = sum("result" in use for invocation in actual for use in invocation.get("tools", []))
    status = _get(case, "final_eval_status")
    return (
        _text(_get(actual[0], "user_content")),
        _text(_get(actual[-1], "final_response")),
        status in (1, "passed"),
        calls,
        results,
    )


@pytest.mark.parametrize("path", EVAL_RESULTS, ids=[path.parent.name for path in EVAL_RESULTS])
def test_each_eval_case_is_a_trace_with_its_verdict(path: Path, tmp_path: Path) -> None:
    document = _document(path)
    db = tmp_path / "a.duckdb"

    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0

    found = query_rows(
        db,
        "SELECT objective, result_summary, success, "
        "list_transform(list_filter(steps, s -> s.type = 'tool_call'), s -> s.tool_name), "
        "len(list_filter(steps, s -> s.type = 'observation')), agent_id "
        "FROM traces ORDER BY row_number",
    )
    cases = _get(document, "eval_case_results")
    assert [row[:5] for row in found] == [_case(case) for case in cases]
    # ADK names a result <app>_<eval set>_<id>: the app is the agent
    name, eval_set = _get(document, "eval_set_result_name"), _get(document, "eval_set_id")
    assert {row[5] for row in found} == {name.split(f"_{eval_set}_")[0]}


def test_a_failed_or_unevaluated_case_is_read_as_such(tmp_path: Path) -> None:
    document = _document(EVAL_RESULTS[0])
    first, second = document["eval_case_results"]
    first["final_eval_status"], second["final_eval_status"] = 2, 3  # failed; not evaluated
    path = tmp_path / "result.evalset_result.json"
    path.write_text(json.dumps(json.dumps(document)))  # as ADK 1.x writes it
    db = tmp_path / "a.duckdb"

    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0

    assert query_rows(db, "SELECT success FROM traces ORDER BY row_number") == [(False,), (None,)]


def test_a_call_without_a_name_is_a_quarantined_session_not_a_crash(tmp_path: Path) -> None:
    session = json.loads((DATA / "123.session.json").read_text())
    calls = [
        part["function_call"]
        for event in session["events"]
        for part in _parts(event)
        if "function_call" in part
    ]
    calls[0]["name"] = {"not": "a name"}
    path = tmp_path / "broken.session.json"
    path.write_text(json.dumps(session))
    db = tmp_path / "a.duckdb"

    assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 1

    [(rule, reason)] = query_rows(db, "SELECT rule, reason FROM quarantine")
    assert rule == "malformed_record" and "function.name" in reason
