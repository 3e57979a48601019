"""Faults injected by a fake OpenAI-compatible server on 127.0.0.1: per fault, the attempts made
(counted by the server) and the status recorded in DuckDB."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from judge_helpers import (
    Reply,
    error_reply,
    fake_server,
    items,
    judge_once,
    tool_reply,
    write_config,
)

ONE_METRIC = """
[[metrics]]
name = "Relevance"
model = "openai-chat:judge"
max_retries = 2
"""

GOOD = tool_reply({"score": 72, "comment": "on topic"})


def stored(db: Path) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "SELECT item_id, status, score, attempts, error FROM judge_results ORDER BY item_id"
        ).fetchall()
    finally:
        con.close()


def overall(db: Path) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "SELECT item_id, status, overall_score FROM latest_judge_scores ORDER BY item_id"
        ).fetchall()
    finally:
        con.close()


def run_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script, config: str = ONE_METRIC):  # type: ignore[no-untyped-def]
    db = tmp_path / "judge.duckdb"
    with fake_server(script, monkeypatch) as server:
        result = judge_once(db, write_config(tmp_path, config), items([("t1", "q?", "an answer")]))
    return server, result, stored(db), db


def test_success_is_one_call_and_a_stored_score(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, result, rows, db = run_fault(tmp_path, monkeypatch, lambda n: GOOD)
    assert server.count == 1
    assert rows == [("t1", "ok", 72.0, 1, None)]
    assert overall(db) == [("t1", "ok", 72.0)]
    request = server.requests[0]
    assert request["tools"][0]["function"]["name"] == "record_judgement"
    # One retry layer: the SDK made no retries of its own (the server saw exactly one request).
    assert not result.failed


def test_429_with_retry_after_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = lambda n: error_reply(429, {"Retry-After": "1"}) if n == 1 else GOOD  # noqa: E731
    db = tmp_path / "judge.duckdb"
    with fake_server(script, monkeypatch) as server:
        from pipelines.judge import calls

        waits: list[float] = []
        real = calls.backoff_delay

        def spy(retry, policy, retry_after=None):  # type: ignore[no-untyped-def]
            waits.append(real(retry, policy, retry_after))
            return waits[-1]

        monkeypatch.setattr(calls, "backoff_delay", spy)
        judge_once(db, write_config(tmp_path, ONE_METRIC), items([("t1", "q?", "an answer")]))
    assert server.count == 2
    assert waits and waits[0] >= 1.0  # the backoff alone would be <= 0.05 s
    assert stored(db) == [("t1", "ok", 72.0, 2, None)]


def test_429_forever_is_rate_limited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server, result, rows, db = run_fault(
        tmp_path, monkeypatch, lambda n: error_reply(429, {"retry-after-ms": "10"})
    )
    assert server.count == 3
    assert [(r[1], r[3]) for r in rows] == [("rate_limited", 3)]
    assert overall(db) == [("t1", "failed", None)]
    assert result.failed


def test_503_twice_then_success(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server, result, rows, _ = run_fault(
        tmp_path, monkeypatch, lambda n: error_reply(503) if n <= 2 else GOOD
    )
    assert server.count == 3
    assert rows == [("t1", "ok", 72.0, 3, None)]
    assert not result.failed


def test_500_forever_stops_after_max_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, result, rows, db = run_fault(tmp_path, monkeypatch, lambda n: error_reply(500))
    assert server.count == 3  # 1 + max_retries
    (row,) = rows
    assert (row[1], row[2], row[3]) == ("provider_error", None, 3)
    assert "500" in str(row[4])
    assert overall(db) == [("t1", "failed", None)]
    assert result.failed


def test_400_is_not_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server, _, rows, _ = run_fault(tmp_path, monkeypatch, lambda n: error_reply(400))
    assert server.count == 1
    assert [(r[1], r[3]) for r in rows] == [("provider_error", 1)]


def test_401_stops_the_run_after_one_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "judge.duckdb"
    config = write_config(tmp_path, "max_concurrency = 1\n" + ONE_METRIC)
    frame = items([(f"t{i}", "q?", f"answer {i}") for i in range(5)])
    with fake_server(lambda n: error_reply(401), monkeypatch) as server:
        result = judge_once(db, config, frame)
    assert server.count == 1
    assert [(r[1], r[3]) for r in stored(db)] == [("auth_error", 1)]
    assert result.failed
    assert result.stop_reason is not None and "authentication" in result.stop_reason
    assert result.submissions_left == 4


def test_quota_exhausted_stops_the_run_like_an_auth_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "judge.duckdb"
    config = write_config(tmp_path, "max_concurrency = 1\n" + ONE_METRIC)
    frame = items([(f"t{i}", "q?", f"answer {i}") for i in range(3)])
    script = lambda n: error_reply(429, code="insufficient_quota")  # noqa: E731
    with fake_server(script, monkeypatch) as server:
        result = judge_once(db, config, frame)
    assert server.count == 1
    assert [(r[1], r[3]) for r in stored(db)] == [("auth_error", 1)]
    assert result.failed and result.submissions_left == 2


def test_dropped_connection_is_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server, _, rows, _ = run_fault(
        tmp_path, monkeypatch, lambda n: Reply(drop=True) if n == 1 else GOOD
    )
    assert server.count == 2
    assert rows == [("t1", "ok", 72.0, 2, None)]


def test_timeout_is_retried_then_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = ONE_METRIC + "\n[retry]\nbase_delay_s = 0.01\nmax_delay_s = 0.02\ntimeout_s = 0.3\n"
    server, _, rows, _ = run_fault(
        tmp_path, monkeypatch, lambda n: Reply(body=GOOD.body, delay_s=1.0), config
    )
    assert server.count == 3
    assert [(r[1], r[3]) for r in rows] == [("timeout", 3)]


def test_malformed_json_arguments_are_a_parse_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _, rows, _ = run_fault(
        tmp_path, monkeypatch, lambda n: tool_reply('{"score": 80, "comm')
    )
    assert server.count == 3
    assert [(r[1], r[2], r[3]) for r in rows] == [("parse_error", None, 3)]
    assert "not valid JSON" in str(rows[0][4])


def test_malformed_response_body(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server, _, rows, _ = run_fault(tmp_path, monkeypatch, lambda n: Reply(body="{not json at all"))
    assert server.count == 3
    assert [(r[1], r[2], r[3]) for r in rows] == [("parse_error", None, 3)]


def test_score_of_150_is_retried_and_never_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _, rows, db = run_fault(
        tmp_path, monkeypatch, lambda n: tool_reply({"score": 150, "comment": "wow"})
    )
    assert server.count == 3
    (row,) = rows
    assert (row[1], row[2], row[3]) == ("parse_error", None, 3)
    assert "150" in str(row[4])
    assert overall(db) == [("t1", "failed", None)]


def test_score_of_150_then_a_valid_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = lambda n: tool_reply({"score": 150, "comment": "x"}) if n == 1 else GOOD  # noqa: E731
    server, _, rows, _ = run_fault(tmp_path, monkeypatch, script)
    assert server.count == 2
    assert rows == [("t1", "ok", 72.0, 2, None)]


def test_blank_submissions_cost_no_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "judge.duckdb"
    frame = items([("empty", "q?", ""), ("spaces", "q?", " \t\n "), ("real", "q?", "answer")])
    with fake_server(lambda n: GOOD, monkeypatch) as server:
        result = judge_once(db, write_config(tmp_path, ONE_METRIC), frame)
    assert server.count == 1
    assert [(r[0], r[1], r[3]) for r in stored(db)] == [
        ("empty", "invalid_input", 0),
        ("real", "ok", 1),
        ("spaces", "invalid_input", 0),
    ]
    # Rejected inputs get no overall score, and do not fail the run: no retry can fix them.
    assert overall(db) == [
        ("empty", "invalid_input", None),
        ("real", "ok", 72.0),
        ("spaces", "invalid_input", None),
    ]
    assert result.submissions_rejected == 2 and not result.failed


def test_no_key_reaches_the_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, _, _, db = run_fault(tmp_path, monkeypatch, lambda n: error_reply(401))
    raw = db.read_bytes()
    assert b"sk-fake-test-key" not in raw
