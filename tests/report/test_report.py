"""The HTML report (`tracegrade report`): every chart and table from the database's
aggregates, offline, with the rows each table leaves out counted; sections whose tables are
missing or empty say so. The browser check is test_report_browser.py."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import duckdb
import pytest
from conftest import query_rows, with_escalating_llm_levels

from pipelines.report import ReportWindow, write_report
from storage.report.queries import TABLE_ROWS
from tracegrade.cli import main
from tracegrade.demo import DEMO_START, write_demo_archive
from transforms.report import CHARTS

ROOT = Path(__file__).resolve().parents[2]
CASES_FILE = ROOT / "tests" / "cases" / "operations" / "cases.jsonl"

_JUDGE_ROWS = """
INSERT INTO judge_results BY NAME
SELECT 'r1' AS run_id, 1 AS run_seq, 'kp:trace:' || i AS item_id, 'traces' AS source,
       m AS metric, 'k' || i || m AS cache_key,
       CASE WHEN i % 7 = 0 THEN 'error' ELSE 'ok' END AS status,
       CASE WHEN i % 7 = 0 THEN NULL ELSE (i * 37) % 100 END AS score,
       NULL AS comment, CASE WHEN i % 7 = 0 THEN 'timeout' END AS error, 'test-model' AS model,
       'v1' AS prompt_version, '{}' AS parameters, 100 AS input_tokens, 20 AS output_tokens,
       5.0 AS latency_ms, 1 AS attempts, 0.001 AS cost_usd, 'live' AS mode,
       'h' AS config_hash, TIMESTAMPTZ '2026-10-02 10:00:00+00' + INTERVAL (i % 3) DAY AS judged_at
FROM range(40) AS t(i), (VALUES ('Clarity'), ('Coverage')) AS v(m)
"""


@pytest.fixture(scope="module")
def full_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Scores, levels, quarantine, runs, operation scores and judge results in one file."""
    from pipelines.operations import score_operations
    from pipelines.score import score_traces

    folder = tmp_path_factory.mktemp("report")
    write_demo_archive(folder / "archive", n_traces=600, days=6, seed=7)
    db = folder / "scores.duckdb"
    score_traces([str(folder / "archive")], db=str(db), no_embedder=True)
    score_operations([str(CASES_FILE)], db=str(db))
    con = duckdb.connect(str(db))
    try:
        con.execute(_JUDGE_ROWS)
    finally:
        con.close()
    return db


def test_the_page_holds_every_chart_and_fetches_nothing(full_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    write_report(full_db, out)
    page = out.read_text()
    for spec in CHARTS:
        assert f'id="chart-{spec.key}"' in page, spec.key
        assert spec.hint in page.replace("&#x27;", "'")
    assert page.count("<script") == len(CHARTS) + 1  # plotly.js once, one call per chart
    ours = page.split("</script>", 1)[1]  # the page after the inlined plotly.js
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", ours)
    assert " src=" not in page.split("<script", 2)[1][:40]
    assert "<link" not in ours and "@import" not in ours
    assert out.stat().st_size < 5_000_000


def test_each_table_counts_what_it_leaves_out_and_shows_its_sql(
    full_db: Path, tmp_path: Path
) -> None:
    data = write_report(full_db, tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text()
    for name in ("lowest_scores", "failing_cases", "judge_failures", "novel_shareable"):
        rows, total, sql = data.lists[name]
        assert query_rows(full_db, f"SELECT count(*) FROM ({sql})") == [(total,)]
        assert rows.height == min(total, TABLE_ROWS)
        if total > TABLE_ROWS:
            expected = f"{TABLE_ROWS} of {total:,} rows shown, and {total - TABLE_ROWS:,} more"
        else:
            expected = f"all {total:,} rows shown"
        assert expected in page, name
    ((scored,),) = query_rows(full_db, "SELECT count(*) FROM latest_scores")
    assert data.lists["lowest_scores"][1] == scored > TABLE_ROWS
    ((failing,),) = query_rows(
        full_db, "SELECT count(*) FROM latest_operation_scores WHERE NOT passed"
    )
    assert data.lists["failing_cases"][1] == failing > 0


def test_the_window_limits_the_traces_drawn(full_db: Path, tmp_path: Path) -> None:
    day = date(DEMO_START.year, DEMO_START.month, DEMO_START.day + 2)
    data = write_report(full_db, tmp_path / "r.html", ReportWindow(since=day, until=day))
    ((expected,),) = query_rows(
        full_db,
        f"SELECT count(*) FROM latest_scores WHERE CAST(created_at AS DATE) = DATE '{day}'",
    )
    assert data.traces == expected > 0
    assert set(data.frames["agent_days"].column("day")) == {day}
    assert f"AND created_at >= TIMESTAMPTZ '{day}'" in data.lists["lowest_scores"][2]


def test_a_database_without_the_tables_says_so(tmp_path: Path) -> None:
    db = tmp_path / "other.duckdb"
    duckdb.connect(str(db)).close()
    data = write_report(db, tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert data.frames == {} and data.traces == 0
    assert "this database has no latest_scores" in page
    assert "this database has no latest_judge_results" in page
    assert "No levels against outcomes: this database has no confidence_traces" in page
    assert 'id="chart-' not in page.split("</script>", 1)[1]


def test_the_command_writes_the_report(
    full_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sub" / "r.html"
    assert main(["report", "--db", str(full_db), "--out", str(out), "--since", "2026-10-01"]) == 0
    assert out.exists() and f"Wrote {out}" in capsys.readouterr().out


def _outcome_figures(page: str) -> str:
    """The AUC sentence of the page's levels-against-outcomes block."""
    block = page.split("<h3>Levels against outcomes</h3>", 1)[1].split("<h3>", 1)[0]
    return re.sub(r"<[^>]+>", "", block)


def test_the_levels_are_measured_against_the_traces_own_outcomes(
    full_db: Path, tmp_path: Path
) -> None:
    """By default the labels are each trace's metadata.success; the figures are those that
    `tracegrade confidence --evaluate 'success::INT'` prints, for the window's traces."""
    from storage.confidence.labels import labelled_levels
    from storage.store.registry import held_store
    from transforms.confidence.level_agreement import evaluate_levels, interval_text

    write_report(full_db, tmp_path / "r.html")
    text = _outcome_figures((tmp_path / "r.html").read_text())
    with held_store(full_db) as store:
        cells, unlabelled = labelled_levels(store, "success::INT", "derived")
    expected = evaluate_levels(cells, unlabelled=unlabelled)
    assert 0.5 < expected.auc < 1.0 and unlabelled == 0
    interval = interval_text(expected.bootstrap, expected.interval)
    assert expected.bootstrap is not None and "resamples" in interval
    assert f"{expected.auc:.3f}, 95% interval {interval}" in text
    assert f"over {expected.traces:,} traces ({expected.good:,} good" in text
    assert "metadata.success" in text
    for level, traces, _, _, rate in expected.levels:
        shown = f"{rate:.1%}" if rate is not None else "-"
        assert f"{level}{traces:,}" in text.replace(" ", "") and shown in text

    day = date(DEMO_START.year, DEMO_START.month, DEMO_START.day + 2)
    data = write_report(full_db, tmp_path / "d.html", ReportWindow(since=day, until=day))
    assert data.outcomes is not None
    counted = sum(cell.good + cell.failed for cell in data.outcomes.cells)
    assert counted == data.traces < expected.traces


def test_given_labels_replace_the_default_and_bad_ones_are_refused(
    full_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import polars as pl

    ids = query_rows(full_db, "SELECT trace_id FROM traces ORDER BY trace_id LIMIT 40")
    labels = tmp_path / "labels.csv"
    pl.DataFrame({"trace_id": [i for (i,) in ids], "label": [1] * 40}).write_csv(labels)
    out = tmp_path / "r.html"
    assert main(["report", "--db", str(full_db), "--out", str(out), "--labels", str(labels)]) == 0
    text = _outcome_figures(out.read_text())
    assert f"the labels file {labels}" in text
    assert "All 40 labelled traces in the window are good (1)" in text
    assert "traces with a level but no label are left out" in text
    capsys.readouterr()
    assert main(["report", "--db", str(full_db), "--out", str(out), "--labels", "nope"]) == 2
    assert "neither a readable labels file nor a SQL expression" in capsys.readouterr().err
    assert main(["report", "--db", str(full_db), "--out", str(out), "--labels", "2"]) == 2
    assert "labels must be 0 or 1" in capsys.readouterr().err


def test_time_axes_tick_at_whole_days_and_levels_run_calmest_first() -> None:
    """One day of quarantine was one bar labelled `00:00:00 Nov 27, 2026`, and the level
    legend ran SILENT, NOTIFY, ESCALATE, CONFIRM."""
    from transforms.report import Table
    from transforms.report.figures import levels_by_day, quarantine_by_day

    day = date(2026, 11, 27)
    one = quarantine_by_day(Table(("day", "unit", "rule", "rows"), [(day, "day", "x", 3)]))
    axis = one["layout"]["xaxis"]
    assert axis["dtick"] == 86_400_000 and axis["tickformat"] == "%Y-%m-%d"
    assert one["data"] == [{"type": "bar", "x": ["2026-11-27"], "y": [3], "name": "x"}]
    levels = Table(
        ("day", "unit", "level", "traces"),
        [
            (day, "day", level, n)
            for n, level in enumerate(["CONFIRM", "ESCALATE", "NOTIFY", "SILENT"])
        ],
    )
    figure = levels_by_day(levels)
    assert [trace["name"] for trace in figure["data"]] == [
        "SILENT",
        "NOTIFY",
        "CONFIRM",
        "ESCALATE",
    ]
    assert figure["layout"]["legend"]["traceorder"] == "normal"


def test_figures_carry_numbers_as_float32_arrays_and_missing_ones_as_gaps() -> None:
    """plotly.js reads `{"dtype": "f4", "bdata": ...}` as a Float32Array: the numbers the
    page carries are the aggregates', to float32 precision, and a day with no median is NaN
    (a gap in the line), not 0."""
    import base64
    import math
    import struct

    from transforms.report import Table
    from transforms.report.figures import median_score_by_agent

    table = Table(
        ("day", "unit", "agent", "median_score"),
        [(date(2026, 11, d), "day", "a", v) for d, v in ((1, 0.25), (2, None), (3, 0.7))],
    )
    (trace,) = median_score_by_agent(table)["data"]
    assert trace["y"]["dtype"] == "f4"
    raw = base64.b64decode(trace["y"]["bdata"])
    first, gap, last = struct.unpack("<3f", raw)
    assert first == 0.25 and math.isnan(gap) and abs(last - 0.7) < 1e-7
    assert trace["x"] == ["2026-11-01", "2026-11-02", "2026-11-03"]


def test_the_report_reads_the_scores_latest_scores_shows(tmp_path: Path) -> None:
    """The report reads each trace's newest score from the rows the runs keep, or, in a file
    older than schema 7, finds it by its newest run_seq (the old view's ranking ran out of
    memory on a DuckLake of 1,000,000 traces): the same rows either way, and the same as
    `latest_scores`, where a second run scored half of the traces again."""
    import polars as pl

    from pipelines.score import score_traces
    from storage.report.queries import latest_sql
    from storage.store.duckdb_store import DuckDBStore
    from transforms.synth.traces import synthetic_traces

    first = synthetic_traces(200, seed=3)
    changed = synthetic_traces(100, seed=4).with_columns(id=first["id"][:100])
    days = [tmp_path / "day1.parquet", tmp_path / "day2.parquet"]
    first.write_parquet(days[0])
    pl.concat([changed, first[100:]]).write_parquet(days[1])
    db = tmp_path / "two-runs.duckdb"
    for day in days:
        score_traces([str(day)], db=str(db), no_embedder=True)
    columns = "trace_id, created_at, agent_id, task_domain, profile, score, novelty, shareable"
    with DuckDBStore(db, read_only=True) as store:
        reads = []
        for kept in (True, False):
            store.execute(latest_sql(kept).replace("__window", ReportWindow().bounds_sql()))
            reads.append(store.sql(f"SELECT {columns} FROM __latest ORDER BY trace_id").rows())
        view = store.sql(f"SELECT {columns} FROM latest_scores ORDER BY trace_id").rows()
        rescored = store.sql(
            "SELECT count(*) FROM (SELECT trace_id FROM scores GROUP BY 1 HAVING count(*) > 1)"
        ).item()
    assert rescored == 100 and len(reads[0]) == 200
    assert reads[0] == reads[1] == view


@pytest.mark.parametrize("later", [True, False])
def test_the_report_counts_each_traces_newest_level_of_one_source_or_two(
    full_db: Path, tmp_path: Path, later: bool
) -> None:
    """With one source of levels the report takes each trace's one level row as its newest;
    with a second source (an LLM's levels of some traces) the newer of the two counts."""

    def escalated(db: Path) -> tuple[int, int]:
        data = write_report(db, tmp_path / f"{db.stem}.html")
        assert data.outcomes is not None
        cells = data.outcomes.cells
        total = sum(cell.good + cell.failed for cell in cells)
        return sum(c.good + c.failed for c in cells if c.level == "ESCALATE"), total

    ((derived, labelled),) = query_rows(
        full_db,
        "SELECT count(*) FILTER (WHERE level = 'ESCALATE'), count(*) FROM confidence_traces c "
        "JOIN latest_scores s USING (trace_id) WHERE s.trace_id IN "
        "(SELECT trace_id FROM traces WHERE success IS NOT NULL)",
    )
    assert escalated(full_db) == (derived, labelled)

    copy = with_escalating_llm_levels(
        full_db,
        tmp_path / "two-sources.duckdb",
        "level <> 'ESCALATE' AND hash(trace_id) % 2 = 0",
        later,
    )
    ((moved,),) = query_rows(
        copy, "SELECT count(*) FROM confidence_trace_rows WHERE source = 'llm'"
    )
    assert 0 < moved < labelled - derived
    assert escalated(copy) == ((derived + moved) if later else derived, labelled)
