"""`tracegrade compare` on a real store: version 2 of an agent ran the same tasks as version 1
and failed one task in ten more; the comparison pairs them by task, says so, and the gate
exits 6 on it. Two halves of one version show no regression. Bad selections and gate lines
are one line and exit 2."""

from __future__ import annotations

import html
import json
import math
import random
import re
from pathlib import Path

import pytest
from conftest import query_rows, with_escalating_llm_levels

from storage.compare._sql import LEVELS
from tracegrade.cli import main
from transforms.synth.traces import synthetic_traces, to_json_records

V1, V2 = "agent_id = 'bot-v1'", "agent_id = 'bot-v2'"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("compare")
    rng = random.Random(1)
    lines, third_lines = [], []
    for record in to_json_records(synthetic_traces(800, seed=3)):
        first = json.loads(json.dumps(record, default=str))
        first["metadata"]["agent_id"] = "bot-v1"
        second = json.loads(json.dumps(first))
        second["id"] = first["id"].replace("kp:trace:", "kp:trace:v2-")
        second["metadata"].update(agent_id="bot-v2", tags=["canary", "eu"])
        if first["metadata"]["success"] and rng.random() < 0.12:
            second["metadata"]["success"] = False
        lines += [json.dumps(first), json.dumps(second)]
        if len(third_lines) < 100:  # a third version whose file records no outcome
            third = json.loads(json.dumps(first))
            third["id"] = first["id"].replace("kp:trace:", "kp:trace:v3-")
            third["metadata"].update(agent_id="bot-v3", success=None, outcome_unknown=True)
            third_lines.append(json.dumps(third))
    export = folder / "day.jsonl"
    export.write_text("\n".join(lines + third_lines) + "\n")
    path = folder / "c.duckdb"
    assert main(["score", str(export), "--db", str(path), "--no-embedder"]) == 0
    return path


def _compare(db: Path, *args: str) -> int:
    return main(["compare", "--db", str(db), *args])


def test_a_version_that_fails_more_tasks_is_a_regression_paired_by_task(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gate = "success < -0.03, score < -0.05"

    status = _compare(db, "--baseline", V1, "--candidate", V2, "--fail-on", gate)
    text = capsys.readouterr().out
    again = _compare(db, "--baseline", V1, "--candidate", V2, "--fail-on", gate)

    assert status == again == 6
    assert capsys.readouterr().out == text  # the same input prints the same text
    assert "compared as paired by objective: " in text
    assert text.splitlines()[-1] == "verdict: REGRESSION (1 of 2 lines: success < -0.03)"
    assert "FAIL  success < -0.03" in text and "pass  score < -0.05" in text
    row = next(line for line in text.splitlines() if line.startswith("| success |"))
    difference = float(row.split("|")[6])
    assert -0.15 < difference < -0.06  # about 12% of the 85% that succeeded
    # each domain on its own, paired by its tasks; each agent ran on one side only: no table
    domains = text.split("## By task_domain")[1].split("## Gate")[0]
    rows = [line for line in domains.splitlines() if line.startswith("| ") and "paired" in line]
    assert len(rows) >= 5 and all("paired, " in row for row in rows)
    assert "## By agent_id" not in text


def test_the_json_says_the_same_and_two_samples_when_asked(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = _compare(
        db,
        "--baseline",
        V1,
        "--candidate",
        V2,
        "--pair-by",
        "none",
        "--json",
        "--fail-on",
        "success < -0.03",
    )
    found = json.loads(capsys.readouterr().out)

    assert status == 6 and found["regression"] is True and found["paired"] is False
    assert found["pairing"] == "two samples"
    success = next(m for m in found["metrics"] if m["metric"] == "success")
    assert success["baseline_n"] == success["candidate_n"] == 800
    assert success["high"] < 0 and success["p_holm"] < 0.01
    assert [g["fired"] for g in found["gate"]] == [True]
    domains = [g for g in found["groups"] if g["column"] == "task_domain"]
    assert sum(g["baseline_traces"] for g in domains) == 800
    assert all(not g["paired"] for g in domains)
    small = [g for g in domains if g["value"].startswith("(pooled: ")]
    assert all(
        min(g["baseline_traces"], g["candidate_traces"]) >= 30
        for g in domains
        if not small or g is not small[0]
    )


def test_two_halves_of_one_version_show_no_regression(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    halves = [f"{V1} AND hash(trace_id) % 2 = {side}" for side in (0, 1)]

    status = _compare(
        db,
        "--baseline",
        halves[0],
        "--candidate",
        halves[1],
        "--fail-on",
        "success < -0.03, score < -0.02, level.ESCALATE > 0.03",
    )
    text = capsys.readouterr().out

    assert status == 0, text
    assert text.splitlines()[-1] == "verdict: no regression (3 lines checked)"


def test_runs_and_time_windows_select_traces(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = _compare(
        db, "--baseline", "run:1", "--candidate", "time:2026-01-10..2026-01-20", "--json"
    )
    found = json.loads(capsys.readouterr().out)

    assert status == 0
    assert found["baseline"]["traces"] == 1700
    assert 0 < found["candidate"]["traces"] < 1700
    assert "trace ids are in both selections" in found["pairing"]


def test_a_selection_names_the_traces_tags(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Version 2's file tags its traces `canary`: selecting by the tag is selecting version 2."""
    by_agent = _compare(db, "--baseline", V1, "--candidate", V2, "--json")
    expected = json.loads(capsys.readouterr().out)
    by_tag = _compare(
        db, "--baseline", V1, "--candidate", "list_contains(tags, 'canary')", "--json"
    )
    found = json.loads(capsys.readouterr().out)

    assert by_tag == by_agent == 0
    assert found["candidate"]["traces"] == 800
    assert found["metrics"] == expected["metrics"]
    assert query_rows(db, "SELECT count(*) FROM traces WHERE tags = ['canary', 'eu']") == [(800,)]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--candidate", "agent_id = 'bot-v9'"], "selects no stored trace"),
        (["--candidate", V1], "select the same 800 traces"),
        (["--candidate", "agnt = 2"], "a selection failed: Binder Error"),
        (["--candidate", V2, "--fail-on", "judge.Relevance < -5"], "does not have"),
        (["--candidate", V2, "--fail-on", "score"], "is not 'METRIC OP NUMBER'"),
        (["--candidate", V2, "--pair-by", "objective;"], "is not a column name"),
    ],
)
def test_bad_selections_and_gate_lines_are_one_line_and_exit_2(
    db: Path, capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    status = _compare(db, "--baseline", V1, *args)
    err = capsys.readouterr().err

    assert status == 2
    assert len(err.strip().splitlines()) == 1 and said in err, err


def test_labels_on_one_side_only_are_said_and_cannot_gate(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    v3 = "agent_id = 'bot-v3'"

    shown = _compare(db, "--baseline", V1, "--candidate", v3)
    text = capsys.readouterr().out
    gated = _compare(db, "--baseline", V1, "--candidate", v3, "--fail-on", "success < -0.03")
    err = capsys.readouterr().err

    assert shown == 0
    assert "Not compared, values on one side only: success" in text
    rows = [line.split(" |")[0] for line in text.splitlines() if line.startswith("| ")]
    assert "| score" in rows and "| success" not in rows
    assert gated == 2 and len(err.strip().splitlines()) == 1
    assert "names success, of which the candidate holds no value" in err


TAU_BENCH = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "tau-bench"


@pytest.mark.skipif(
    not (TAU_BENCH / "gpt-4o-airline.json").is_file(),
    reason=f"the tau-bench trajectories are not at {TAU_BENCH} (the shared data folder sits "
    "beside the repository checkout)",
)
def test_halves_of_tau_bench_s_runs_of_one_agent_show_no_regression(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """200 trajectories gpt-4o ran on tau-bench's airline tasks (labelled: 84 succeeded), split
    three ways into halves: the gate on the success rate, the score and the levels never
    fires, and the halves share too few tasks to be paired."""
    db = tmp_path / "tau.duckdb"
    source = str(TAU_BENCH / "gpt-4o-airline.json")
    assert main(["score", source, "--db", str(db), "--no-embedder"]) == 0
    capsys.readouterr()
    gate = "success < -0.05, score < -0.02, level.ESCALATE > 0.05, level.NOTIFY > 0.05"
    for salt in ("", "a", "b"):
        half = f"hash(trace_id || '{salt}') % 2"
        status = _compare(
            db, "--baseline", f"{half} = 0", "--candidate", f"{half} = 1", "--fail-on", gate
        )
        text = capsys.readouterr().out
        assert status == 0, text
        assert "compared as two samples: only" in text
        assert text.splitlines()[-1] == "verdict: no regression (4 lines checked)"


def test_a_baseline_from_a_database_of_its_own(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Last month's database against this month's: version 1's runs in one file, version 2's
    in another, paired by task across the two; the same traces scored in both compare as
    equal instead of being refused as one selection."""
    lines = (db.parent / "day.jsonl").read_text().splitlines()
    for name, agent in (("old", "bot-v1"), ("new", "bot-v2")):
        export = tmp_path / f"{name}.jsonl"
        export.write_text("\n".join(line for line in lines if f'"{agent}"' in line) + "\n")
        assert (
            main(["score", str(export), "--db", str(tmp_path / f"{name}.duckdb"), "--no-embedder"])
            == 0
        )
    capsys.readouterr()
    old, new = str(tmp_path / "old.duckdb"), str(tmp_path / "new.duckdb")

    def apart(db: str, baseline_db: str, *gate: str) -> int:
        args = ["--baseline-db", baseline_db, "--baseline", "true", "--candidate", "true"]
        return _compare(Path(db), *args, *gate)

    worse = apart(new, old, "--fail-on", "success < -0.03")
    text = capsys.readouterr().out
    same = apart(old, old, "--fail-on", "success < -0.03, score < -0.01")
    alike = capsys.readouterr().out
    missing = apart(new, str(tmp_path / "nope.duckdb"))

    assert worse == 6 and "compared as paired by objective: " in text
    assert same == 0 and "800 trace ids are in both databases" in alike
    assert "| success | " in alike and "+0.0000 | +0.0000 to +0.0000" in alike
    assert missing == 2


def test_the_gate_and_the_pairing_from_the_config_file(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "tracegrade.toml"
    config.write_text('[compare]\nfail_on = ["success < -0.03"]\npair_by = []\n')

    status = _compare(db, "--baseline", V1, "--candidate", V2, "--config", str(config))
    text = capsys.readouterr().out
    flags = _compare(
        db,
        "--baseline",
        V1,
        "--candidate",
        V2,
        "--config",
        str(config),
        "--fail-on",
        "score < -0.5",
        "--pair-by",
        "objective",
    )
    overridden = capsys.readouterr().out

    assert status == 6 and "compared as two samples\n" in text
    assert "FAIL  success < -0.03" in text
    assert flags == 0 and "compared as paired by objective" in overridden
    assert "pass  score < -0.5" in overridden and "success < -0.03" not in overridden


def test_a_ducklake_gives_the_same_comparison_as_one_file(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lake = f"ducklake:sqlite:{tmp_path / 'meta.sqlite'}"
    export = str(db.parent / "day.jsonl")
    data = ["--data-path", str(tmp_path / "data")]
    assert main(["score", export, "--db", lake, *data, "--no-embedder"]) == 0
    capsys.readouterr()
    args = ["--baseline", V1, "--candidate", V2, "--fail-on", "success < -0.03"]
    shown = []
    for store in (lake, str(db)):
        for form in ([], ["--json"]):
            assert main(["compare", "--db", store, *args, *form]) == 6
            shown.append(capsys.readouterr().out)

    assert shown[0] == shown[2]  # the text, to the last digit printed
    # The same rows, which the lake holds in another order: added up alike but for the last
    # bits of a sum.
    assert _same_figures(json.loads(shown[1]), json.loads(shown[3]))


def _chart_data(page: str, div: str) -> list[dict[str, object]]:
    """The traces a chart's `Plotly.newPlot` call draws, as the page holds them."""
    call = f'Plotly.newPlot("{div}", '
    start = page.index(call) + len(call)
    data, _ = json.JSONDecoder().raw_decode(page, start)
    return data  # type: ignore[no-any-return]


def test_the_report_draws_the_comparison_and_the_tasks_that_moved(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gate = "success < -0.03, score < -0.05"
    out = tmp_path / "r.html"
    args = ["--baseline", V1, "--candidate", V2, "--fail-on", gate]
    assert main(["report", "--db", str(db), "--out", str(out), *args]) == 0
    capsys.readouterr()
    assert _compare(db, *args, "--json") == 6
    found = json.loads(capsys.readouterr().out)
    page = out.read_text()
    section = page.split('<section id="compare">')[1].split("</section>")[0]
    assert page.index('<section id="compare">') < page.index('<section id="overview">')
    assert 'href="#compare"' in page
    assert "Verdict: REGRESSION (1 of 2 lines)." in section
    assert "FAIL  success &lt; -0.03: difference" in section
    (points,) = _chart_data(page, "chart-compare")
    metrics = [m for m in found["metrics"] if m["difference"] is not None]
    assert points["y"] == [m["metric"] for m in metrics]
    assert points["x"] == [m["difference"] for m in metrics]
    error = points["error_x"]
    assert error["array"] == pytest.approx([m["high"] - m["difference"] for m in metrics])  # type: ignore[index]
    # the tasks that moved most, against the newest scores averaged by hand
    sides = query_rows(
        db,
        "SELECT t.agent_id, t.objective, avg(s.score) FROM latest_scores s "
        "JOIN traces t USING (trace_id, content_hash) WHERE t.agent_id IN ('bot-v1', 'bot-v2') "
        "GROUP BY ALL",
    )
    means: dict[str, dict[str, float]] = {}
    for agent, objective, score in sides:
        means.setdefault(str(objective), {})[str(agent)] = float(score)
    moved = sorted(
        ((v["bot-v2"] - v["bot-v1"], o) for o, v in means.items() if len(v) == 2),
        key=lambda pair: (-abs(pair[0]), pair[1]),
    )
    table = section.split("The tasks that moved most")[1].split("<h3>")[0]
    cells = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1])
    rows = [re.findall(r"<td>(.*?)</td>", row) for row in cells]
    assert len(rows) == min(20, len(moved))
    assert [(row[0], row[6]) for row in rows] == [
        (html.escape(o), f"{d:+.4f}") for d, o in moved[: len(rows)]
    ]
    assert all(row[7] in LEVELS and row[8] in LEVELS for row in rows)
    assert "<h3>By domain</h3><table>" in section


def test_a_report_given_one_side_of_a_comparison_says_which_is_missing(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.html"
    assert main(["report", "--db", str(db), "--out", str(out), "--candidate", V2]) == 2
    assert "--candidate needs --baseline" in capsys.readouterr().err
    assert main(["report", "--db", str(db), "--out", str(out), "--fail-on", "score < 0"]) == 2
    assert "--fail-on needs --baseline and --candidate" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(("later", "escalated"), [(True, 1.0), (False, None)])
def test_a_trace_levelled_by_two_sources_counts_its_newest_level(
    db: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    later: bool,
    escalated: float | None,
) -> None:
    """With one source of levels the comparison reads each trace's one level row as its
    newest; with a second source (an LLM's levels of version 2) the newer of the two counts."""
    copy = with_escalating_llm_levels(
        db, tmp_path / "two-sources.duckdb", "trace_id LIKE 'kp:trace:v2-%'", later
    )
    ((derived,),) = query_rows(
        copy,
        "SELECT avg((level = 'ESCALATE')::DOUBLE) FROM confidence_trace_rows "
        "WHERE source = 'derived' AND trace_id LIKE 'kp:trace:v2-%'",
    )

    status = _compare(copy, "--baseline", V1, "--candidate", V2, "--pair-by", "none", "--json")
    found = json.loads(capsys.readouterr().out)

    assert status == 0
    share = next(m for m in found["metrics"] if m["metric"] == "level.ESCALATE")
    assert share["candidate_mean"] == pytest.approx(escalated if later else derived)
    assert derived < 1.0  # the derived levels alone do not escalate every trace


def _changed_copy(db: Path, copy: Path, statement: str, *, fold: bool = True) -> Path:
    """A copy of the store with `statement` (one or more, `;`-separated) run on it; `fold`:
    its `latest_trace_rows` then rebuilt, as publications would have left it."""
    import shutil

    import duckdb

    from storage.store.latest_rows import rebuild

    shutil.copyfile(db, copy)
    con = duckdb.connect(str(copy))
    try:
        con.execute(statement)
        if fold:
            rebuild(con)
    finally:
        con.close()
    return copy


def _as_schema_6(db: Path, copy: Path) -> Path:
    """A copy of the store as a file written before schema 7: no `latest_score_rows`, its
    `latest_scores` the view that ranks the score history, and no `latest_trace_rows`."""
    from storage.schema.scoring import latest_scores_select

    return _changed_copy(
        db,
        copy,
        "DROP VIEW latest_scores; DROP TABLE latest_score_rows; DROP TABLE latest_trace_rows; "
        f"CREATE VIEW latest_scores AS {latest_scores_select('scores')}; "
        "UPDATE meta SET value = '6' WHERE key = 'schema_version'",
        fold=False,
    )


def test_a_file_older_than_the_kept_latest_scores_compares_the_same(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Read-only, a file of schema 6 is not migrated: the comparison finds each trace's newest
    score in the history there, and says what it says on a file that keeps them; the same with
    such a file as the baseline's database beside a current store."""
    old = _as_schema_6(db, tmp_path / "old.duckdb")
    gate = ["--fail-on", "success < -0.03", "--json"]
    shown = []
    for store in (db, old):
        assert _compare(store, "--baseline", V1, "--candidate", V2, *gate) == 6
        shown.append(capsys.readouterr().out)
    # The current file is read from `latest_trace_rows`, the old one joined: the same rows
    # added up in another order, the same figures to the last bits' rounding.
    assert _same_figures(json.loads(shown[0]), json.loads(shown[1]))
    assert query_rows(
        old, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'latest_score_rows'"
    ) == [(0,)]
    mixed = []
    for store, baseline in ((db, old), (db, db)):
        args = ["--baseline-db", str(baseline), "--baseline", V1, "--candidate", V2]
        assert _compare(store, *args, *gate) == 6
        mixed.append(capsys.readouterr().out)
    assert _same_figures(json.loads(mixed[0]), json.loads(mixed[1]))


def _same_figures(a: object, b: object) -> bool:
    """Whether two comparisons' JSON say the same, numbers equal within 1e-9 of each other
    (DuckDB's sums of the same rows in another order differ in the last bits)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_figures(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_figures(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return (
            isinstance(a, int | float)
            and isinstance(b, int | float)
            and (math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12))
        )
    return a == b


def test_the_cells_summed_in_fewer_aggregates_are_the_general_ones(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scores counted by the traces, the levels' shares by one count and the 0-or-1
    metrics' squares by their sums (`cell_forms`) give what every metric counted and squared
    gives: on traces without a level (their shares null) and without an outcome (version 3)."""
    import storage.compare.store as compare_store
    from storage.compare._cells import general_forms

    copy = _changed_copy(
        db,
        tmp_path / "some-unlevelled.duckdb",
        "DELETE FROM confidence_trace_rows WHERE hash(trace_id) % 5 = 0",
    )
    args = ["--baseline", V1, "--candidate", "agent_id <> 'bot-v1'", "--pair-by", "none"]
    shown = []
    for general in (False, True):
        if general:
            monkeypatch.setattr(compare_store, "cell_forms", lambda ms: general_forms(len(ms)))
        assert _compare(copy, *args, "--json") == 0
        shown.append(json.loads(capsys.readouterr().out))
    assert shown[0] == shown[1]
    levels = {m["metric"]: m for m in shown[0]["metrics"] if m["metric"].startswith("level.")}
    assert levels and all(m["baseline_n"] < shown[0]["baseline"]["traces"] for m in levels.values())
    success = next(m for m in shown[0]["metrics"] if m["metric"] == "success")
    assert success["candidate_n"] < shown[0]["candidate"]["traces"]


def test_tasks_of_long_objectives_pair_within_a_small_memory(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pairing columns are kept as their MD5 (`task_columns`), taken of the trace row before
    its joins: objectives of 50 KB pair as the short ones do, within a store of 128 MB (which
    ran out of memory when the objectives' text was carried through the joins)."""
    import storage.store.duckdb_store as duckdb_store

    copy = _changed_copy(
        db,
        tmp_path / "long-objectives.duckdb",
        "UPDATE trace_rows SET objective = objective || repeat(' and more', 5600)",
    )
    args = ["--baseline", V1, "--candidate", V2, "--json"]
    assert _compare(db, *args) == 0
    short = json.loads(capsys.readouterr().out)
    monkeypatch.setattr(duckdb_store, "MEMORY_LIMIT", "128MB")
    assert _compare(copy, *args) == 0
    long = json.loads(capsys.readouterr().out)
    # the same tasks paired, the same means; the intervals differ (a task's cell is a hash of
    # its objective, which is longer here)
    assert long["pairing"] == short["pairing"] and long["pairing"].startswith("paired by ")
    counted = ("metric", "baseline_n", "candidate_n")
    assert [[m[k] for k in counted] for m in long["metrics"]] == [
        [m[k] for k in counted] for m in short["metrics"]
    ]
    means = ("baseline_mean", "candidate_mean")
    assert [m[k] for m in long["metrics"] for k in means] == pytest.approx(
        [m[k] for m in short["metrics"] for k in means], rel=1e-12
    )
    assert query_rows(copy, "SELECT min(length(objective)) FROM trace_rows")[0][0] > 50_000
    # the report's tasks that moved most: keyed the same way, their objectives read back whole
    out = tmp_path / "long.html"
    assert main(["report", "--db", str(copy), "--out", str(out), *args[:4]]) == 0
    table = out.read_text().split("The tasks that moved most")[1].split("<h3>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1])
    shown = [re.findall(r"<td>(.*?)</td>", row)[0] for row in rows]
    assert len(shown) == 20 and all(cell.endswith(" and more" * 5600) for cell in shown)
