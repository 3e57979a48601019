"""Near-duplicate answers judged once (`[near_duplicates] distance`, issue 42): answers to the
same objective built to lie within the distance share the first one's judgements, each shared
row saying from which answer it came; answers built not to (another fact, a paraphrase beyond
the distance, the same words to another objective) are judged on their own. Real embedding
model, real pydantic-ai requests to a fake server that counts them."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from conftest import query_rows as query
from judge_helpers import ON_FAKE_SERVER, fake_server, tool_reply, write_config

from tracegrade.cli import main

CAPITAL = "What is the capital of Australia?"
ANSWERS = [  # id, objective, answer, the answer it shares with (None: judged on its own)
    ("a1", CAPITAL, "The capital of Australia is Canberra.", None),
    ("a2", CAPITAL, "The capital of Australia is Canberra", "a1"),  # cosine distance 0.006
    ("a3", CAPITAL, "the capital of australia is canberra.", "a1"),  # 0.0 (an uncased model)
    ("a4", CAPITAL, "The capital of Australia is Sydney.", None),  # another fact: 0.125
    ("a5", CAPITAL, "Canberra is the capital city of Australia.", None),  # 0.029, over 0.02
    ("b1", "Name a city in Australia.", "The capital of Australia is Canberra.", None),
]

CONFIG = (
    ON_FAKE_SERVER
    + """
[[metrics]]
name = "Coverage"

[[metrics]]
name = "Relevance"
"""
)

SHARING = "\n[near_duplicates]\ndistance = 0.02\n"


def _table(tmp_path: Path) -> Path:
    path = tmp_path / "answers.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "user_query", "submission"])
        writer.writerows(row[:3] for row in ANSWERS)
    return path


def test_near_duplicates_share_the_first_answer_s_judgements(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    table, config = _table(tmp_path), write_config(tmp_path, CONFIG + SHARING)
    db = tmp_path / "shared.duckdb"
    argv = ["judge", "--db", str(db), "--config", str(config), "--table", str(table)]
    own = [row for row in ANSWERS if row[3] is None]

    assert main([*argv, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"calls to make: {2 * len(own)} " in out
    assert f"{2 * (len(ANSWERS) - len(own))} shared from near-duplicate answers" in out

    def reply(n: int) -> object:  # every call its own score, so a copy is seen as one
        return tool_reply({"score": float(n), "comment": f"call {n}"})

    with fake_server(reply, monkeypatch) as server:
        assert main(argv) == 0
        assert server.count == 2 * len(own)
        report = capsys.readouterr().out
        assert "| judgements shared from a near-duplicate answer (no call) | 4 |" in report
        rows = query(
            db,
            "SELECT item_id, metric, score, comment, shared_from, cost_usd FROM judge_results "
            "ORDER BY item_id, metric",
        )
        by_item = {
            (item, metric): (score, comment, shared)
            for item, metric, score, comment, shared, _ in rows
        }
        for item, _, _, leader in ANSWERS:
            for metric in ("Coverage", "Relevance"):
                score, comment, shared = by_item[(item, metric)]
                assert shared == leader, item
                if leader is not None:
                    assert (score, comment) == by_item[(leader, metric)][:2]
        scores = {str(r[0]) for r in rows if r[2] is not None}
        assert scores == {item for item, *_ in ANSWERS}
        assert len({r[2] for r in rows if r[4] is None}) == 2 * len(own)  # each its own call
        # a re-run calls nothing and writes no judgement again
        assert main(argv) == 0
        assert server.count == 2 * len(own)
        assert query(db, "SELECT count(*) FROM judge_results") == [(len(rows),)]


def test_without_the_setting_every_answer_is_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table, config = _table(tmp_path), write_config(tmp_path, CONFIG)
    db = tmp_path / "own.duckdb"
    with fake_server(lambda n: tool_reply({"score": 50.0, "comment": ""}), monkeypatch) as server:
        assert main(["judge", "--db", str(db), "--config", str(config), "--table", str(table)]) == 0
        # a1 and b1 differ in objective only: both called
        assert server.count == 2 * len(ANSWERS)
    assert query(db, "SELECT count(*) FROM judge_results WHERE shared_from IS NOT NULL") == [(0,)]
