"""`tracegrade pull phoenix` and `push phoenix` against a stand-in Phoenix on 127.0.0.1
(tests/phoenix/fake_phoenix.py) serving real Phoenix spans: incremental pulls, traces that
arrive over two pulls, the quiet period, faults mid-pull, and the push's annotations.
The real server: tests/phoenix/test_phoenix_server.py (`make phoenix-test`)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from fake_phoenix import REAL_SPANS, FakePhoenix, fake_phoenix, real_traces, renamed

import pipelines.phoenix_api as phoenix_api
from pipelines.errors import ServerUnavailable
from pipelines.phoenix import ORPHAN_AFTER_S, pull_phoenix, push_otlp, push_phoenix
from storage.store.duckdb_store import DuckDBStore
from tracegrade.cli.app import main
from transforms.errors import PageError
from transforms.phoenix import source_key, span_rowid

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def no_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries without their waits (the waits themselves are not what these tests check)."""
    monkeypatch.setattr(phoenix_api, "WAITS_S", (0.0, 0.0, 0.0, 0.0))


def _pull(phoenix: FakePhoenix, db: Path, **options: Any) -> Any:
    """`pull_phoenix` of the fake server; a trace with no root waits as it would a day after the
    recorded spans ended (they ended on 2026-11-28: past that, the rule would score it)."""
    options.setdefault("quiet_s", 0.0)
    options.setdefault("orphan_after_s", ORPHAN_AFTER_S + _age_of_the_recording())
    return pull_phoenix(phoenix.url, "support-agent", str(db), no_embedder=True, **options)


def _age_of_the_recording() -> float:
    ended = max(
        datetime.fromisoformat(span["end_time"]) for trace in real_traces() for span in trace
    )
    return (datetime.now(UTC) - ended).total_seconds()


def _scores(db: Path) -> list[tuple[Any, ...]]:
    with DuckDBStore(db, read_only=True) as store:
        return store.rows(
            "SELECT trace_id, score, len(steps), result_summary FROM latest_scores "
            "JOIN traces USING (trace_id) ORDER BY trace_id"
        )


def test_phoenix_ids_and_the_source_as_stored() -> None:
    assert span_rowid("U3BhbjoxMg==") == 12
    with pytest.raises(PageError, match="not a Phoenix span id"):
        span_rowid("UHJvamVjdDox")  # Project:1
    assert (
        source_key("https://user:secret@phoenix.example:6006/base/?api_key=k", "agents")
        == "https://phoenix.example:6006/base#agents"
    )


def test_a_rerun_asks_only_for_new_spans_and_scores_only_new_traces(tmp_path: Path) -> None:
    db = tmp_path / "scores.duckdb"
    with fake_phoenix() as phoenix:
        phoenix.add(*real_traces())
        first = _pull(phoenix, db)
        assert (first.spans, first.traces, first.waiting) == (12, 3, 0)
        assert first.run is not None and first.run.counts["rows_scored"] == 3
        direct = tmp_path / "direct.duckdb"
        assert main(["score", str(REAL_SPANS), "--db", str(direct), "--no-embedder"]) == 0
        assert _scores(db) == _scores(direct)

        phoenix.add(*(renamed(trace, "ab") for trace in real_traces()))
        phoenix.requests.clear()
        second = _pull(phoenix, db)
        assert (second.spans, second.traces) == (12, 3)
        assert len(phoenix.requests) == 1  # its one page reached the spans kept before
        assert len(_scores(db)) == 6

        third = _pull(phoenix, db)
        assert (third.spans, third.traces, third.run) == (0, 0, None)


def test_a_trace_whose_root_comes_in_a_later_pull_is_scored_once_whole(tmp_path: Path) -> None:
    db, whole = tmp_path / "scores.duckdb", tmp_path / "whole.duckdb"
    tool_trace = real_traces()[1]  # the invoice question: AGENT, LLM, TOOL (failed), LLM, TOOL, LLM
    root = [span for span in tool_trace if span["parent_id"] is None]
    children = [span for span in tool_trace if span["parent_id"] is not None]
    with fake_phoenix() as phoenix:
        phoenix.add(children)
        early = _pull(phoenix, db)
        assert (early.spans, early.traces, early.waiting) == (5, 0, 1)
        assert _scores(db) == []
        phoenix.add(root)
        late = _pull(phoenix, db)
        assert (late.spans, late.traces, late.waiting) == (1, 1, 0)
    with fake_phoenix() as phoenix:
        phoenix.add(tool_trace)
        _pull(phoenix, whole)
    assert _scores(db) == _scores(whole)
    assert len(_scores(db)) == 1


def test_a_span_arriving_after_its_trace_was_scored_rescores_the_whole_trace(
    tmp_path: Path,
) -> None:
    db, whole = tmp_path / "scores.duckdb", tmp_path / "whole.duckdb"
    tool_trace = real_traces()[1]
    late = tool_trace[-2]  # a child span: its trace is complete without it
    assert late["parent_id"] is not None
    with fake_phoenix() as phoenix:
        phoenix.add([span for span in tool_trace if span is not late])
        assert _pull(phoenix, db).traces == 1
        before = _scores(db)
        phoenix.add([late])
        again = _pull(phoenix, db)
        assert (again.spans, again.traces) == (1, 1)
    with fake_phoenix() as phoenix:
        phoenix.add(tool_trace)
        _pull(phoenix, whole)
    assert _scores(db) == _scores(whole) != before  # replaced, one row, as if whole at once


def test_since_leaves_out_spans_that_started_before_it(tmp_path: Path) -> None:
    db = tmp_path / "scores.duckdb"
    with fake_phoenix() as phoenix:
        phoenix.add(*real_traces())
        after_all = max(datetime.fromisoformat(s["start_time"]) for s in phoenix.spans)
        nothing = _pull(phoenix, db, since=after_all + timedelta(seconds=1))
        assert (nothing.spans, nothing.traces) == (0, 0)
        assert _pull(phoenix, tmp_path / "all.duckdb").spans == 12


def test_a_trace_still_running_waits_for_the_quiet_period(tmp_path: Path) -> None:
    db = tmp_path / "scores.duckdb"
    trace = real_traces()[0]
    now = datetime.now(UTC)
    for span in trace:
        span["end_time"] = (now - timedelta(seconds=30)).isoformat()
    with fake_phoenix() as phoenix:
        phoenix.add(trace)
        assert _pull(phoenix, db, quiet_s=300).waiting == 1
        assert _scores(db) == []
        assert _pull(phoenix, db, quiet_s=10).traces == 1


def test_phoenix_failing_mid_pull_leaves_nothing_partial_and_the_rerun_continues(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, clean = tmp_path / "scores.duckdb", tmp_path / "clean.duckdb"
    monkeypatch.setattr(phoenix_api, "PAGE_SIZE", 4)
    with fake_phoenix() as phoenix:
        phoenix.add(*real_traces())
        phoenix.faults = [None, 503, 503, 503, 503, 503]  # the second page, every try
        with pytest.raises(ServerUnavailable, match=r"in 5 tries \(the last: HTTP 503\)"):
            _pull(phoenix, db)
        assert _scores(db) == []
        with DuckDBStore(db, read_only=True) as store:
            kept = store.rows(
                "SELECT count(*), max(pending_cursor) FROM phoenix_spans, phoenix_pulls"
            )
        assert kept[0][0] == 4 and kept[0][1] is not None  # the first page, and where it ended

        phoenix.requests.clear()
        rerun = _pull(phoenix, db)
        assert "cursor" in phoenix.requests[0][2]  # it went on from the page it had not got
        assert (rerun.spans, rerun.traces) == (8, 3)
        _pull(phoenix, clean)
    assert _scores(db) == _scores(clean)


def test_429s_and_unreadable_pages_are_tried_again_then_one_line_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "scores.duckdb"
    with fake_phoenix() as phoenix:
        phoenix.add(*real_traces())
        phoenix.faults = [429, 429]
        assert _pull(phoenix, db).traces == 3
        assert len(phoenix.requests) == 3

        phoenix.add(renamed(real_traces()[0], "cd"))
        phoenix.faults = ["garbage", "not a page"]  # a proxy's error page, say: tried again
        phoenix.requests.clear()
        assert _pull(phoenix, db).traces == 1
        assert len(phoenix.requests) == 3

        phoenix.add(renamed(real_traces()[0], "ce"))
        phoenix.faults = ["garbage"] * 5
        args = ["pull", "phoenix", "--endpoint", phoenix.url, "--project", "support-agent"]
        assert main([*args, "--db", str(db), "--no-embedder", "--quiet", "0"]) == 4
        error = capsys.readouterr().err.strip().splitlines()
        assert error == [
            f"tracegrade: Phoenix gave no usable answer to GET {phoenix.url}/v1/projects/"
            "support-agent/spans in 5 tries (the last: an answer that is not JSON); what was "
            "done before stays done (whole pages, whole requests), and the next run continues "
            "from there"
        ]
        with DuckDBStore(db, read_only=True) as store:
            assert store.rows("SELECT count(*) FROM phoenix_spans") == [(16,)]  # not "ce"


def test_a_request_that_times_out_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(phoenix_api, "TIMEOUT_S", 0.5)
    with fake_phoenix() as phoenix:
        phoenix.add(*real_traces())
        phoenix.faults = ["slow"]
        assert _pull(phoenix, tmp_path / "scores.duckdb").traces == 3
        assert len(phoenix.requests) == 2


def _annotations_match_the_store(phoenix: FakePhoenix, db: Path) -> None:
    """Each trace annotation the push wrote holds its trace's stored value score or level."""
    with DuckDBStore(db, read_only=True) as store:
        rows = store.rows(
            "SELECT s.trace_id, s.score, c.level, c.reason, c.aggregate FROM latest_scores s "
            "JOIN confidence_traces c USING (trace_id)"
        )
    by_trace = {row[0]: row[1:] for row in rows}
    for item in phoenix.annotations.values():
        score, level, reason, aggregate = by_trace[item["metadata"]["trace_id"]]
        if item["name"] == "tracegrade.value":
            assert item["result"]["score"] == score
        elif item["name"] == "tracegrade.level":
            assert item["result"] == {"score": aggregate, "label": level, "explanation": reason}


def _steps_match_the_store(phoenix: FakePhoenix, db: Path) -> int:
    """Each step annotation holds its step's stored derived confidence and sits on a span of
    the step's trace of the step's kind (a tool call on a TOOL span, a thought on an LLM
    span); returns how many there are."""
    spans = {span["context"]["span_id"]: span for span in phoenix.spans}
    with DuckDBStore(db, read_only=True) as store:
        rows = store.rows(
            "SELECT trace_id, step_index, step_kind, score FROM confidence_steps "
            "WHERE source = 'derived'"
        )
    stored = {(trace, index): (kind, score) for trace, index, kind, score in rows}
    from transforms.otel import otel_trace_id

    found = 0
    for (name, span_id, _), item in phoenix.annotations.items():
        if name != "tracegrade.step_confidence":
            continue
        found += 1
        span, meta = spans[span_id], item["metadata"]
        kind, score = stored[(meta["trace_id"], meta["step"])]
        assert item["result"]["score"] == score
        assert otel_trace_id(span["context"]["trace_id"]) == meta["trace_id"]
        assert span["span_kind"] == {"thought": "LLM"}.get(kind, "TOOL"), (kind, span)
    return found


def test_push_writes_each_traces_scores_once_and_says_what_it_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "scores.duckdb"
    monkeypatch.setenv("PHOENIX_API_KEY", "phx-secret-key-123")
    assert main(["score", str(REAL_SPANS), "--db", str(db), "--no-embedder"]) == 0  # by file
    with fake_phoenix() as phoenix:
        phoenix.add(*(renamed(trace, "ef") for trace in real_traces()))
        _pull(phoenix, db)
        first = push_phoenix(phoenix.url, "support-agent", str(db))
        assert (first.written, first.spans, first.skipped) == (6 + 5, 3 + 5, 3)
        assert first.names == {
            "tracegrade.level": 3,
            "tracegrade.value": 3,
            "tracegrade.step_confidence": 5,
        }
        annotations = phoenix.annotations
        assert len(annotations) == 11
        assert {key[2] for key in annotations} == {"tracegrade"}
        assert all(h.get("Authorization") == "Bearer phx-secret-key-123" for h in phoenix.headers)
        _annotations_match_the_store(phoenix, db)
        assert _steps_match_the_store(phoenix, db) == 5  # each on a span of its own
        again = push_phoenix(phoenix.url, "support-agent", str(db))
        assert (again.written, again.unchanged) == (0, 11)
    assert b"phx-secret-key-123" not in db.read_bytes()
    wal = Path(f"{db}.wal")
    assert not wal.exists() or b"phx-secret-key-123" not in wal.read_bytes()


def test_prefect_yaml_declares_the_phoenix_pull_off_until_a_site_sets_it() -> None:
    from prefect.cli.deploy._models import PrefectYamlModel
    from prefect.flows import load_flow_from_entrypoint

    raw = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    deployments = {d.name: d for d in PrefectYamlModel.model_validate(raw).deployments}
    pull = deployments["phoenix-pull"]
    flow = load_flow_from_entrypoint(str(ROOT / pull.entrypoint))
    assert flow.name == "pull_phoenix"
    validated = flow.validate_parameters(dict(pull.parameters))
    assert validated["db"] == dict(deployments["nightly"].parameters)["db"]
    (raw_pull,) = [d for d in raw["deployments"] if d["name"] == "phoenix-pull"]
    assert [schedule["active"] for schedule in raw_pull["schedules"]] == [False]
    assert (
        raw_pull["concurrency_limit"] == 1 and raw_pull["work_pool"]["work_queue_name"] == "writer"
    )


def test_push_otlp_sends_evaluation_events_and_a_pull_leaves_them_out(tmp_path: Path) -> None:
    db = tmp_path / "scores.duckdb"
    with fake_phoenix() as phoenix:
        phoenix.add(*real_traces())
        _pull(phoenix, db)
        assert push_otlp(phoenix.url, str(db), project="support-agent") == (3 + 5, 6 + 5)
        sent = [span for span in phoenix.spans if span["name"] == "gen_ai.evaluation"]
        roots = {s["context"]["span_id"] for s in phoenix.spans if s["parent_id"] is None}
        on_roots = [span for span in sent if span["parent_id"] in roots]
        assert len(sent) == 8 and len(on_roots) == 3
        with DuckDBStore(db, read_only=True) as store:
            scores = dict(store.rows("SELECT trace_id, score FROM latest_scores"))
        for span in on_roots:
            events = {e["attributes"]["gen_ai.evaluation.name"]: e for e in span["events"]}
            assert set(events) == {"tracegrade.value", "tracegrade.level"}
            value = events["tracegrade.value"]
            assert value["name"] == "gen_ai.evaluation.result"
            trace = value["attributes"]["tracegrade.trace_id"]
            assert value["attributes"]["gen_ai.evaluation.score.value"] == scores[trace]
        again = _pull(phoenix, db)
        assert (again.spans, again.traces) == (0, 0)  # its own verdicts are not agent work


def _pull_command(phoenix: FakePhoenix, db: Path) -> list[str]:
    return [
        *(str(Path(sys.executable).with_name("tracegrade")), "pull", "phoenix"),
        *("--endpoint", phoenix.url, "--project", "support-agent", "--db", str(db)),
        *("--no-embedder", "--quiet", "0"),
    ]


def _stage(db: Path) -> str:
    """Where a killed pull stood: not started, paging, scoring (a run left running), or done."""
    if not db.exists():
        return "not started"
    with DuckDBStore(db, read_only=True) as store:
        if not store.has_table("phoenix_pulls"):
            return "not started"
        if store.rows("SELECT count(*) FROM phoenix_pulls WHERE pending_cursor IS NOT NULL")[0][0]:
            return "paging"
        if store.rows("SELECT count(*) FROM runs WHERE status = 'running'")[0][0]:
            return "scoring"
        delivered = store.rows("SELECT count(*) FROM phoenix_spans WHERE delivered_at IS NULL")
        return "scored, not marked" if delivered[0][0] else "done"


def test_a_pull_killed_at_any_stage_reruns_to_what_a_clean_pull_stores(tmp_path: Path) -> None:
    clean = tmp_path / "clean.duckdb"
    traces = [renamed(trace, f"{n:02x}") for n in range(4) for trace in real_traces()]
    with fake_phoenix() as phoenix:
        phoenix.add(*traces)  # 48 spans, 12 traces
        phoenix.page_cap = 5
        _pull(phoenix, clean)
        phoenix.page_delay_s = 0.3
        stages: list[str] = []
        for moment in (0.5, 1.5, 3.0, 5.0, 7.0):  # paging, paging, keeping, scoring, after
            db = tmp_path / f"killed-{moment}.duckdb"
            pull = subprocess.Popen(
                _pull_command(phoenix, db),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd=ROOT,
            )
            time.sleep(moment)
            pull.send_signal(signal.SIGKILL)
            pull.wait()
            stages.append(_stage(db))
            phoenix.page_delay_s = 0.0
            _pull(phoenix, db)
            phoenix.page_delay_s = 0.3
            assert _scores(db) == _scores(clean), moment
            with DuckDBStore(db, read_only=True) as store:
                kept = store.rows("SELECT count(*), count(DISTINCT span_rowid) FROM phoenix_spans")
                statuses = {row[0] for row in store.rows("SELECT status FROM runs")}
            assert kept == [(48, 48)], moment
            assert "running" not in statuses, (moment, statuses)
    assert "paging" in stages  # at least one kill fell between two pages
