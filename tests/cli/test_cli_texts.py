"""What a new user reads in their first hour, checked word for word: the demo's summary, the
errors and tables of `tracegrade sql`, `judge --dry-run` without a key, the wording of
`confidence --evaluate`, the report's empty sections and every command's help.

The long texts are snapshots in tests/cases/texts/ (run ids, timings and paths replaced by
placeholders); `TRACEGRADE_UPDATE_SNAPSHOTS=1 pytest tests/cli/test_cli_texts.py`
writes them again after a deliberate change, to be read in the diff. Each test also asserts the
defect it guards against, so that a snapshot taken of a wrong text still fails.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tracegrade.cli.app import _parser, main

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = ROOT / "tests" / "cases" / "texts"
TRACEGRADE = str(Path(sys.executable).parent / "tracegrade")


def normalised(text: str, folder: Path) -> str:
    """`text` with what changes from run to run replaced: the folder, run ids, seconds."""
    text = text.replace(str(folder), "<dir>")
    text = re.sub(r"\b[0-9a-f]{32}\b", "<run id>", text)
    text = re.sub(r"\| ([a-z ()]+) \| \d+\.\d\d \|", r"| \1 | <s> |", text)
    return re.sub(r"\d+ times, the longest \d+\.\d+ s, \d+\.\d+ s in all", "<holds>", text)


def snapshot(name: str, text: str) -> None:
    """`text` equals the stored snapshot `name` (written anew with the variable set)."""
    path = SNAPSHOTS / name
    if os.environ.get("TRACEGRADE_UPDATE_SNAPSHOTS") == "1" or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} changed: compare with {path}"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    """`tracegrade demo --no-embedder` run once, as a user runs it: (its folder, stdout, stderr)."""
    folder = tmp_path_factory.mktemp("demo")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    done = subprocess.run(
        [TRACEGRADE, "demo", "--no-embedder"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
        check=True,
    )
    yield folder, done.stdout, done.stderr


def _counts(summary: str) -> dict[str, int]:
    return {
        label: int(value.replace(",", ""))
        for label, value in re.findall(r"^\| ([^|]+?) \| ([\d,]+) \|$", summary, re.MULTILINE)
    }


def test_the_demo_summary_counts_each_row_and_file_once(demo: tuple[Path, str, str]) -> None:
    folder, out, err = demo
    summary = out[out.index("# tracegrade run") : out.index("Query the scores with SQL")]
    counts = _counts(summary)
    assert counts["rows read"] == counts["rows scored (valid)"] + counts["rows quarantined"]
    whole = counts["files quarantined whole (no row read; below)"]
    assert counts["files read"] == counts["files loaded"] + whole == 31
    assert "| empty_file |" in summary and "traces-broken-empty.jsonl" in summary
    # the skipped judge is said once, in the summary; stderr has only the progress lines
    assert out.count("# tracegrade judge: skipped") == 1 and "judge" not in err
    assert all(" scoring: " in line for line in err.splitlines()), err
    snapshot("demo-summary.md", normalised(summary, folder))


def test_the_demo_finds_the_agent_version_deployed_halfway_worse(
    demo: tuple[Path, str, str],
) -> None:
    """The archive's support-02 is replaced by support-02-v2 halfway through the month, which
    fails a quarter of the tasks the old one solved with a tool error: the demo's comparison
    says so, and its gate's lines fire on success, score and the share of ESCALATE."""
    out = demo[1]
    said = out[out.index("Did support-02 get worse") : out.index("The report (charts")]

    assert "--baseline \"agent_id = 'support-02'\"" in said
    assert said.strip().splitlines()[-1] == (
        "verdict: REGRESSION (3 of 3 lines: success < -0.05, score < -0.02, level.ESCALATE > 0.03)"
    )


def _sql(folder: Path, query: str, *extra: str) -> subprocess.CompletedProcess[str]:
    db = folder / "tracegrade-demo" / "demo.duckdb"
    return subprocess.run(
        [TRACEGRADE, "sql", "--db", str(db), query, *extra],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        env={**os.environ, "COLUMNS": "120"},
    )


def test_sql_errors_keep_duckdb_s_help_and_point_to_the_tables_only_when_it_helps(
    demo: tuple[Path, str, str],
) -> None:
    folder = demo[0]
    table = _sql(folder, "SELECT * FROM score")
    syntax = _sql(folder, "SELEC 1")
    write = _sql(folder, "DELETE FROM quarantine")
    assert (table.returncode, syntax.returncode, write.returncode) == (2, 2, 2)
    assert 'Did you mean "scores"?' in table.stderr and "docs/storage.md" in table.stderr
    assert "LINE 1: SELEC 1" in syntax.stderr and "        ^" in syntax.stderr
    assert "docs/storage.md" not in syntax.stderr and "docs/storage.md" not in write.stderr
    assert "read-only" in write.stderr
    text = "\n---\n".join(p.stderr for p in (table, syntax, write))
    snapshot("sql-errors.txt", normalised(text, folder))


def test_sql_tables_fit_the_terminal_and_cut_no_value(
    demo: tuple[Path, str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = demo[0]
    db = str(folder / "tracegrade-demo" / "demo.duckdb")
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)  # a terminal: a box by default
    wide = "SELECT * FROM latest_scores ORDER BY trace_id LIMIT 2"
    assert main(["sql", "--db", db, wide]) == 0
    lines = capsys.readouterr().out
    reasons = (
        "SELECT rule, reason FROM quarantine WHERE rule = 'invalid_created_at' "
        "ORDER BY reason LIMIT 2"
    )
    assert main(["sql", "--db", db, reasons]) == 0
    boxed = capsys.readouterr().out
    # 27 columns do not fit 120 characters: one per line, each value whole, and it says so
    assert "config_hash = " in lines and "do not fit 120 characters: one per line" in lines
    assert max(map(len, lines.splitlines())) <= 120
    # a long reason is folded inside its column, not cut at 60 characters
    assert boxed.startswith("┌") and "..." not in boxed
    assert max(map(len, boxed.splitlines())) <= 120 and "ISO-8601" in boxed
    piped = _sql(folder, "SELECT rule, count(*) AS n FROM quarantine GROUP BY 1 ORDER BY 1")
    assert piped.returncode == 0 and piped.stdout.splitlines()[0] == "rule,n"  # a pipe: CSV
    snapshot("sql-tables.txt", normalised(lines + "---\n" + boxed, folder))


def test_the_judge_shows_its_cost_without_a_key(
    demo: tuple[Path, str, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = demo[0]
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    db = str(folder / "tracegrade-demo" / "demo.duckdb")
    config = str(ROOT / "configs" / "evaluator.toml")
    assert main(["judge", "--db", db, "--config", config, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "estimated cost: $" in out and "ANTHROPIC_API_KEY (not set)" in out
    snapshot("judge-dry-run.txt", out)


def test_ties_are_not_falls() -> None:
    from transforms.confidence.level_agreement import LevelRate, rate_verdict

    def levels(rates: list[float]) -> list[LevelRate]:
        names = ["SILENT", "NOTIFY", "CONFIRM", "ESCALATE"]
        return [LevelRate(name, 10, 0, 0, rate) for name, rate in zip(names, rates, strict=True)]

    tie = rate_verdict(levels([0.0, 0.0, 0.2, 0.6]))
    fall = rate_verdict(levels([0.0, 0.3, 0.2, 0.6]))
    rise = rate_verdict(levels([0.0, 0.1, 0.2, 0.6]))
    assert "does not rise" not in tie and "SILENT and NOTIFY both at 0.0%" in tie
    assert "falls from NOTIFY (30.0%) to CONFIRM (20.0%)" in fall
    assert rise == "The failure rate rises with each less calm level that holds traces."


def test_confidence_evaluate_on_the_demo(
    demo: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(demo[0] / "tracegrade-demo" / "demo.duckdb")
    assert main(["confidence", "--db", db, "--evaluate", "success"]) == 0
    out = capsys.readouterr().out
    assert "does not rise" not in out
    snapshot("confidence-evaluate.md", out)
    assert main(["confidence", "--db", db, "--evaluate", "success", "--source", "factors"]) == 1
    err = capsys.readouterr().err
    assert "holds no factors levels" in err and "--factors FILE" in err


def test_the_report_s_empty_sections_say_why(demo: tuple[Path, str, str]) -> None:
    folder = demo[0]
    page = (folder / "tracegrade-demo" / "demo.duckdb.report.html").read_text()
    notes = re.findall(r'<p class="empty">(.*?)</p>', page)
    assert not any("No chart" in note or "judge-distribution" in note for note in notes)
    assert any("The LLM judge has not judged anything" in note for note in notes)
    operations = page[page.index('<section id="operations">') :]
    assert "window" not in operations[: operations.index("</section>")]
    assert '<td class="note">' not in page
    snapshot("report-empty-notes.txt", "\n".join(notes) + "\n")


def test_every_argument_of_every_command_says_what_it_is() -> None:
    missing = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")
            elif not isinstance(action, argparse._HelpAction) and not action.help:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")

    walk(_parser(), "tracegrade")
    assert missing == []
