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
