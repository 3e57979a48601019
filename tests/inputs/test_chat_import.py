"""Importing chat trajectories: the task, the flows and the command, on the real tau-bench file.

The file is read from ../shared/data/tau-bench/ beside the repository checkout, never copied
into the repository; tests that need it are skipped with the reason when it is absent.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from pipelines.chat_import import import_chat
from tracegrade.cli import main

ROOT = Path(__file__).resolve().parents[2]
TAU_BENCH = ROOT.parent / "shared" / "data" / "tau-bench" / "gpt-4o-airline.json"
needs_tau_bench = pytest.mark.skipif(
    not TAU_BENCH.is_file(),
    reason=f"the tau-bench trajectories are not at {TAU_BENCH} (the shared data folder sits "
    "beside the repository checkout); these tests read the real file and are skipped without it",
)
OPTIONS = {"agent_id": "gpt-4o-airline", "task_domain": "customer_service"}


def imported(tmp_path: Path, source: Path = TAU_BENCH, **options: Any) -> tuple[Any, pl.DataFrame]:
    out = tmp_path / "traces.parquet"
    summary = import_chat(str(source), str(out), None, None, OPTIONS | options)
    return summary, pl.read_parquet(out)


def step_kinds(row: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(step["type"], (step["tool"] or {}).get("name")) for step in row["steps"]]


@needs_tau_bench
def test_all_200_trajectories_import_with_the_counts_read_from_the_file(tmp_path: Path) -> None:
    summary, traces = imported(tmp_path)
    assert (summary.records, summary.imported, summary.rejected) == (200, 200, {})
    assert (summary.succeeded, summary.imported - summary.succeeded) == (84, 116)
    assert traces["id"].n_unique() == 200
    types = Counter(step["type"] for steps in traces["steps"].to_list() for step in steps)
    # 2,454 assistant messages: 1,380 with text, 1,164 tool calls; 1,164 tool messages;
    # 73 tool results start with "Error", 63 of them are retried within 3 other calls.
    assert types == {"thought": 1380, "observation": 1164, "tool_call": 1101, "error_recovery": 63}
    report = pl.read_csv(summary.report)
    assert report.height == 0


@needs_tau_bench
def test_task_0_trial_0_books_after_a_payment_error_and_fails(tmp_path: Path) -> None:
    _, traces = imported(tmp_path)
    row = traces.row(0, named=True)
    assert row["metadata"]["success"] is False  # reward 0.0
    assert (
        row["task"]["objective"]
        == "Hi! I'm looking to book a flight from New York to Seattle on May 20th."
    )
    kinds = step_kinds(row)
    assert len(kinds) == 23
    assert kinds[:6] == [
        ("thought", None),
        ("thought", None),
        ("tool_call", "get_user_details"),
        ("observation", None),
        ("tool_call", "search_direct_flight"),
        ("observation", None),
    ]
    assert kinds[13:22] == [
        ("tool_call", "book_reservation"),
        ("observation", None),
        ("tool_call", "think"),
        ("observation", None),
        ("tool_call", "calculate"),
        ("observation", None),
        ("thought", None),
        ("error_recovery", "book_reservation"),
        ("observation", None),
    ]
    assert (
        row["steps"][14]["content"]
        == "Error: payment amount does not add up, total price is 305, but paid 255"
    )
    assert row["steps"][17]["input"] == '{"expression":"305 - 250"}'
    assert '"flight_number":"HAT136"' in row["steps"][20]["input"]
    assert row["outcome"]["result_summary"].startswith(
        "Your flight from New York (JFK) to Seattle (SEA) has been successfully booked."
    )
    assert row["metadata"]["created_at"].isoformat() == "1970-01-01T00:00:00+00:00"


@needs_tau_bench
def test_task_15_trial_0_fails_on_seats_and_never_retries(tmp_path: Path) -> None:
    _, traces = imported(tmp_path)
    row = traces.row(15, named=True)
    assert row["metadata"]["success"] is False
    assert row["task"]["objective"].startswith("Hi! I need to remove a passenger named Sophia")
    assert step_kinds(row) == [("thought", None)] * 5 + [
        ("tool_call", "get_reservation_details"),
        ("observation", None),
        ("thought", None),
        ("tool_call", "update_reservation_flights"),
        ("observation", None),
    ] + [("thought", None)] * 4 + [
        ("tool_call", "cancel_reservation"),
        ("observation", None),
        ("thought", None),
    ]
    assert row["steps"][9]["content"] == "Error: not enough seats on flight HAT290"


@needs_tau_bench
def test_task_35_trial_3_transfers_to_a_human_and_succeeds(tmp_path: Path) -> None:
    _, traces = imported(tmp_path, base_time="2024-05-15T20:00:00Z", time_step_seconds=60)
    row = traces.row(185, named=True)
    assert row["metadata"]["success"] is True  # reward 1.0
    assert step_kinds(row) == [("thought", None)] * 3 + [
        ("tool_call", "transfer_to_human_agents"),
        ("observation", None),
    ]
    assert row["steps"][4]["content"] == "Transfer successful"
    assert row["outcome"]["result_summary"].startswith(
        "Given the circumstances, I recommend transferring you"
    )
    assert row["metadata"]["created_at"].isoformat() == "2024-05-15T23:05:00+00:00"  # + 185 minutes


@needs_tau_bench
def test_reimporting_is_idempotent_and_jsonl_gives_the_same_traces(tmp_path: Path) -> None:
    _, first = imported(tmp_path / "a")
    _, again = imported(tmp_path / "b")
    assert first.equals(again)
    lines = tmp_path / "gpt-4o-airline.jsonl"
    records = json.loads(TAU_BENCH.read_text(encoding="utf-8"))
    lines.write_text("\n".join(json.dumps(record) for record in records) + "\n", encoding="utf-8")
    _, from_lines = imported(tmp_path / "c", lines)
    assert first.equals(from_lines)


@pytest.mark.slow
@needs_tau_bench
def test_import_and_score_all_200_with_the_real_embedder(
    prefect_server: None, tmp_path: Path
) -> None:
    from pipelines.flows import import_and_score_chat

    out, db = tmp_path / "traces.parquet", tmp_path / "scores.duckdb"
    imported_summary, scored = import_and_score_chat(
        str(TAU_BENCH), str(out), str(db), options=OPTIONS
    )
    assert imported_summary.imported == 200
    assert (
        scored.counts["rows_scored"],
        scored.counts["rows_quarantined"],
        scored.counts["texts_embedded"],
    ) == (200, 0, 200)
    traces = pl.read_parquet(out)
    first, transfer = traces["id"][0], traces["id"][185]
    con = duckdb.connect(str(db), read_only=True)
    try:
        totals = con.execute(
            "SELECT count(*), sum(t.success::INT), sum(s.error_recovery), sum(s.n_steps), "
            "count(DISTINCT s.profile), sum((s.novelty_source = 'embedding')::INT) "
            "FROM latest_scores s JOIN traces t USING (trace_id)"
        ).fetchone()
        rows = {
            trace_id: (complexity, novelty, diversity, outcome, overrides, score)
            for trace_id, complexity, novelty, diversity, outcome, overrides, score in con.execute(
                "SELECT trace_id, complexity, novelty, tool_diversity, outcome_confidence, overrides, score "
                "FROM latest_scores WHERE trace_id IN (?, ?)",
                [first, transfer],
            ).fetchall()
        }
    finally:
        con.close()
    assert totals == (200, 84, 63, 3708, 1, 199)
    # the nightly flow's derived confidence (issue 5): every trajectory gets a level, and the
    # run summary shows the same distribution as the store
    con = duckdb.connect(str(db), read_only=True)
    try:
        levels = dict(
            con.execute(
                "SELECT level, count(*) FROM confidence_traces WHERE source = 'derived' "
                "GROUP BY level"
            ).fetchall()
        )
        failed_levels = con.execute(
            "SELECT count(DISTINCT c.level), count(*) "
            "FROM confidence_traces c JOIN traces t USING (trace_id) WHERE NOT t.success"
        ).fetchone()
    finally:
        con.close()
    assert sum(levels.values()) == 200 and len(levels) >= 2
    assert scored.levels is not None
    assert dict(scored.levels.select("level", "traces").iter_rows()) == levels
    assert "## Intervention levels (derived confidence)" in scored.markdown
    assert failed_levels is not None and failed_levels[1] == 116  # the 116 reward-0 runs
    # task 0 trial 0: 4 step types, an error_recovery, 23 steps; 6 tools; failed
    c, n, d, o, overrides, score = rows[first]
    assert (c, o, overrides) == (1.0, pytest.approx(0.3), [])
    assert d == pytest.approx(6 / 23 * 3)
    assert score == pytest.approx(0.2 * 1.0 + 0.3 * n + 0.2 * 6 / 23 * 3 + 0.3 * 0.3)
    # task 35 trial 3: 3 types, 5 steps, one tool; succeeded with confidence 1.0
    c, n, d, o, overrides, score = rows[transfer]
    assert (c, d, o) == (pytest.approx(0.425), pytest.approx(0.6), 1.0) and len(overrides) == 1
    assert score == pytest.approx(0.2 * 0.425 + 0.3 * n + 0.2 * 0.6 + 0.3 * 1.0 - 0.1)
    again = import_and_score_chat(str(TAU_BENCH), str(out), str(db), options=OPTIONS)[1]
    assert (again.counts["files_skipped"], again.counts.get("rows_scored", 0)) == (1, 0)


@needs_tau_bench
def test_derived_levels_separate_the_rewards_no_trace_field_carries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # docs/import.md's measurement (issue 23): success from a field that is not the reward,
    # the reward as a labels file beside, then scored and evaluated from the command line.
    base = ["--agent-id", "gpt-4o-airline", "--domain", "customer_service"]
    traces, labels, db = tmp_path / "traces.parquet", tmp_path / "labels.parquet", tmp_path / "s.db"
    assert (
        main(
            [
                "import",
                "chat",
                str(TAU_BENCH),
                "--out",
                str(traces),
                "--success",
                "trial >= 0",
                *base,
            ]
        )
        == 0
    )
    assert main(["import", "chat", str(TAU_BENCH), "--out", str(labels), *base]) == 0
    assert main(["score", str(traces), "--db", str(db), "--no-embedder"]) == 0
    capsys.readouterr()
    assert main(["confidence", "--db", str(db), "--evaluate", str(labels)]) == 0
    out = capsys.readouterr().out
    auc = float(out.split("ROC AUC of the confidence (good above failed): ")[1].split(",")[0])
    assert auc >= 0.70
    assert "| of them failed (label 0) | 116 |" in out
    assert "The failure rate rises with each less calm level that holds traces." in out


def test_the_flow_imports_and_leaves_its_summary(prefect_server: None, tmp_path: Path) -> None:
    from prefect.artifacts import Artifact

    from pipelines.flows import import_chat

    source = tmp_path / "runs.jsonl"
    good = {
        "id": "r1",
        "reward": 1,
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    }
    source.write_text(
        json.dumps(good) + "\n" + json.dumps(good | {"id": "r2", "messages": []}) + "\n"
    )
    summary = import_chat(
        str(source),
        str(tmp_path / "t.parquet"),
        options={"messages_field": "messages", "id_fields": ["id"]},
    )
    assert (summary.imported, summary.rejected) == (1, {"empty_trajectory": 1})
    artifact = Artifact.get("import-chat-summary")
    assert artifact is not None and "| rejected: empty_trajectory | 1 |" in str(artifact.data)


def test_the_command_reports_bad_trajectories_per_record_and_continues(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user, reply = {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}
    lines = [
        {"task_id": 1, "trial": 0, "reward": 1, "traj": [user, reply]},
        {"task_id": 2, "trial": 0, "reward": 0, "traj": [user, {"role": "robot", "content": "?"}]},
        {
            "task_id": 3,
            "trial": 0,
            "reward": 0,
            "traj": [user, {"role": "tool", "tool_call_id": "x", "content": "?"}],
        },
        {"task_id": 4, "trial": 0, "reward": 0, "traj": []},
        {
            "task_id": 5,
            "trial": 0,
            "reward": 0,
            "traj": [user, {"role": "assistant", "content": 3}],
        },
    ]
    source = tmp_path / "runs.jsonl"
    source.write_text("\n".join(json.dumps(line) for line in lines) + "\n{not json\n")
    out = tmp_path / "out" / "traces.parquet"
    status = main(
        [
            "import",
            "chat",
            str(source),
            "--out",
            str(out),
            "--agent-id",
            "a",
            "--retry-window",
            "any",
        ]
    )
    captured = capsys.readouterr()
    assert status == 0
    assert "| imported as traces | 1 |" in captured.out and "| rejected | 5 |" in captured.out
    assert "| rejected: malformed_record | 2 |" in captured.out
    assert "imported 1 of 6 trajectories, rejected 5" in captured.err
    report = pl.read_csv(tmp_path / "out" / "traces.import-report.csv")
    assert report.select("record_number", "key", "rule").rows() == [
        (2, "[2,0]", "unknown_role"),
        (3, "[3,0]", "unmatched_tool_message"),
        (4, "[4,0]", "empty_trajectory"),
        (5, "[5,0]", "malformed_record"),
        (6, None, "malformed_record"),
    ]
    assert pl.read_parquet(out)["metadata"].struct.field("agent_id").to_list() == ["a"]


def test_the_command_exits_1_when_nothing_imports_and_2_for_bad_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "runs.json"
    source.write_text(json.dumps([{"task_id": 1, "trial": 0, "reward": 1, "traj": []}]))
    out = str(tmp_path / "t.parquet")
    assert main(["import", "chat", str(source), "--out", out]) == 1
    assert main(["import", "chat", str(source), "--out", out, "--success", "reward = 1"]) == 2
    assert "success = 'reward = 1'" in capsys.readouterr().err
    assert main(["import", "chat", str(tmp_path / "none.json"), "--out", out]) == 2
    with pytest.raises(SystemExit):
        main(["import", "chat", str(source), "--out", out, "--retry-window", "many"])


def test_a_later_duplicate_replaces_the_earlier_row_in_the_written_file(tmp_path: Path) -> None:
    user, reply = {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}
    lines = [
        {"task_id": 1, "trial": 0, "reward": 0, "traj": [user, reply]},
        {"task_id": 2, "trial": 0, "reward": 0, "traj": [user, reply]},
        {"task_id": 1, "trial": 0, "reward": 1, "traj": [user, reply]},
    ]
    source = tmp_path / "runs.jsonl"
    source.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    out = tmp_path / "traces.parquet"
    summary = import_chat(str(source), str(out))
    assert (summary.records, summary.imported, summary.succeeded) == (3, 2, 1)
    assert summary.rejected == {"duplicate_id": 1}
    written = pl.read_parquet(out)
    assert written["metadata"].struct.field("success").to_list() == [False, True]
    assert written["metadata"].struct.field("created_at").dt.second().to_list() == [1, 2]
    report = pl.read_csv(summary.report)
    assert report.select("record_number", "rule").rows() == [(1, "duplicate_id")]
    assert "record 3 has the same trace id (key [1,0])" in report["reason"][0]


def _content(traces: pl.DataFrame) -> list[tuple[Any, ...]]:
    """What each trace says, apart from its id and outcome: objective, steps, answer."""
    return sorted(
        (row["task"]["objective"], json.dumps(row["steps"]), row["outcome"]["result_summary"])
        for row in traces.to_dicts()
    )


@needs_tau_bench
def test_messages_alone_or_under_messages_read_as_the_trajectories_they_are(
    tmp_path: Path,
) -> None:
    """tau-bench's 200 message lists written as a program that keeps only its messages writes
    them: one list a line, `{"messages": [...]}` a line (OpenAI's chat shape), and one list a
    file. Each is read with no flag to the same objectives, steps and answers as the
    trajectories the records hold; the content names each trace (no id field is there), and
    the outcome is unknown (no reward is there)."""
    _, expected = imported(tmp_path / "records")
    records = json.loads(TAU_BENCH.read_text(encoding="utf-8"))
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps(r["traj"]) + "\n" for r in records), encoding="utf-8")
    wrapped = tmp_path / "wrapped.jsonl"
    wrapped.write_text(
        "".join(json.dumps({"messages": r["traj"]}) + "\n" for r in records), encoding="utf-8"
    )
    one = tmp_path / "one.json"
    one.write_text(json.dumps(records[0]["traj"], indent=2), encoding="utf-8")
    ids = {}
    for path, count in ((bare, 200), (wrapped, 200), (one, 1)):
        db = tmp_path / f"{path.stem}.duckdb"
        assert main(["score", str(path), "--db", str(db), "--no-embedder"]) == 0
        with duckdb.connect(str(db), read_only=True) as con:
            found = con.sql(
                "SELECT count(*), count(DISTINCT trace_id), count(success) FROM traces"
            ).fetchone()
            ids[path.stem] = {row[0] for row in con.sql("SELECT trace_id FROM traces").fetchall()}
        assert found == (count, count, 0)
    # the same messages are the same trace, alone or under `messages`
    assert ids["bare"] == ids["wrapped"] and ids["one"] < ids["bare"]
    out = tmp_path / "bare.parquet"
    import_chat(str(bare), str(out), None, None, OPTIONS)
    assert _content(pl.read_parquet(out)) == _content(expected)
    import_chat(str(wrapped), str(out), None, None, OPTIONS)
    assert _content(pl.read_parquet(out)) == _content(expected)
    import_chat(str(one), str(out), None, None, OPTIONS)
    assert _content(pl.read_parquet(out)) == _content(expected.head(1))
