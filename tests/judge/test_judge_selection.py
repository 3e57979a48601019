"""`tracegrade judge --select SQL --sample SHARE` (issue 42): the judge spent where the cheap
signals point, plus a seeded calibration sample, on the demo's archive scored for real and a
fake OpenAI-compatible server that counts the calls."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import query_rows as query
from judge_helpers import ON_FAKE_SERVER, fake_server, tool_reply, write_config

from tracegrade.cli import main
from tracegrade.demo import write_demo_archive

CONFIG = (
    ON_FAKE_SERVER
    + """
[[metrics]]
name = "Coverage"
weight = 0.5

[[metrics]]
name = "Relevance"
weight = 0.5

[prices."openai-chat:judge"]
input_per_mtok = 1.0
output_per_mtok = 2.0
"""
)

FLAGGED = "level IN ('CONFIRM', 'ESCALATE')"


@pytest.fixture(scope="module")
def scored_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("demo")
    write_demo_archive(folder / "archive", n_traces=400, days=4)
    db = folder / "demo.duckdb"
    assert main(["score", str(folder / "archive"), "--db", str(db), "--no-embedder"]) in (0, 1)
    return db


def _calls(out: str, heading: str) -> int:
    """The 'calls to make' of the dry run's block under `heading`."""
    block = out.split(heading, 1)[1]
    return int(re.search(r"calls to make: ([\d,]+)", block).group(1).replace(",", ""))  # type: ignore[union-attr]


def test_select_and_sample_make_the_calls_the_dry_run_states(
    scored_demo: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = tmp_path / "demo.duckdb"
    db.write_bytes(scored_demo.read_bytes())
    config = write_config(tmp_path, CONFIG)
    chosen = ["--select", FLAGGED, "--sample", "0.05", "--seed", "7"]
    base = ["judge", "--db", str(db), "--config", str(config)]

    assert main([*base, *chosen, "--dry-run"]) == 0
    out = capsys.readouterr().out
    every, stated = _calls(out, "Every stored trace:"), _calls(out, "The selection (")
    picked = re.search(r"([\d,]+) selected by .*?; ([\d,]+) sampled", out)
    assert picked is not None
    selected, sampled = (int(group.replace(",", "")) for group in picked.groups())
    # the selection is what the stored levels say, counted here apart from the judge
    ((flagged, blank),) = query(
        db,
        "SELECT count(*) FILTER (level IN ('CONFIRM', 'ESCALATE')), "
        "count(*) FILTER (level IN ('CONFIRM', 'ESCALATE') AND trim(coalesce(result_summary, '')) = '') "
        "FROM traces JOIN (SELECT trace_id, arg_max(level, computed_at) AS level "
        "FROM confidence_traces GROUP BY trace_id) USING (trace_id)",
    )
    ((traces,),) = query(db, "SELECT count(*) FROM traces")
    assert selected == flagged and 0 < sampled < 0.15 * (traces - flagged)
    assert 0 < stated < every

    with fake_server(lambda n: tool_reply({"score": 70, "comment": "ok"}), monkeypatch) as server:
        assert main([*base, *chosen]) == 0
        # two metrics a picked answer; blank ones, and answers the run already judged word for
        # word, never called
        assert server.count == stated
        # every picked trace has its overall row (a blank answer's without a call), no other
        assert query(db, "SELECT count(*) FROM judge_scores") == [(selected + sampled,)]
        assert stated <= 2 * (selected + sampled - blank)
        report = capsys.readouterr().out
        assert (
            f"{selected:,} selected by `{FLAGGED}`; {sampled:,} sampled (5.0% of the rest, seed 7)"
            in report
        )
        # the same selection next night: the same traces, judged already, no call
        assert main([*base, *chosen]) == 0
        assert server.count == stated
        # another seed samples other traces: only they are called
        assert main([*base, "--select", FLAGGED, "--sample", "0.05", "--seed", "8"]) == 0
        assert stated < server.count < 2 * stated
    judged = query(db, "SELECT count(DISTINCT item_id) FROM judge_results")
    assert judged[0][0] > selected


def test_bad_selections_are_one_line_each(
    scored_demo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, CONFIG)
    base = ["judge", "--db", str(scored_demo), "--config", str(config), "--dry-run"]

    assert main([*base, "--select", "levle = 'CONFIRM'"]) == 2
    err = capsys.readouterr().err
    assert "does not run over the stored traces" in err and "level_confidence" in err
    assert len(err.strip().splitlines()) == 1
    assert main([*base, "--sample", "0"]) == 2
    assert "above 0 and at most 1" in capsys.readouterr().err
    assert main([*base, "--select", FLAGGED, "--table", str(tmp_path / "t.csv")]) == 2
    assert "not with --table" in capsys.readouterr().err
    assert main([*base, "--seed", "3"]) == 2
    assert "--seed goes with --sample" in capsys.readouterr().err
