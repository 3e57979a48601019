"""bench_report: `tracegrade report` on 1,000,000 and 10,000,000 synthetic traces: seconds to
write the report, its size, and seconds until headless Chromium has drawn every chart.

Targets (issue 17): under 5 MB, opens in under 3 s, at 10,000,000 traces. The baseline is
the first size, 5,000 traces (the demo's): a report built from
aggregates should be about as large at 10,000,000 traces as at 5,000.

The databases are built with SQL alone, straight into the tables (no scoring run: that is
bench_end_to_end's subject): `scores` with one row per trace over 90 days, 50 agents with a
skewed share each, six domains, and every 20th trace scored twice (so `latest_scores` has a
choice to make); a `traces` row per trace (no steps; its success follows the outcome
confidence with noise, so the levels against outcomes have both labels); a derived
`confidence_traces` row per trace; judge results for 1 % of the
traces on two metrics; quarantine rows for 1 %; one run a day with stage timings. They are kept
in bench/out/ and reused.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import duckdb
from _common import OUT_DIR, add_common_args, begin, end, save_result

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

import chromium_page  # noqa: E402

from pipelines.report import write_report  # noqa: E402
from storage.schema.scoring import latest_scores_select  # noqa: E402
from storage.store.duckdb_store import DuckDBStore  # noqa: E402
from storage.store.latest_rows import is_current, rebuild  # noqa: E402

DAYS = 90
_DAY_S = 86_400

_SCORES = f"""
INSERT INTO score_rows BY NAME
SELECT 'kp:trace:' || i AS trace_id, 'run-' || (i % {DAYS}) AS run_id,
       1 + (i % {DAYS}) + CASE WHEN i < $rescored THEN {DAYS} ELSE 0 END AS run_seq,
       'h' AS content_hash,
       TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_seconds((i * 7919) % ({DAYS} * {_DAY_S}))
           AS created_at,
       'agent-' || CAST(floor(skew * 50) AS INT) AS agent_id,
       ['code', 'finance', 'medical', 'travel', 'customer_service', NULL][1 + i % 6]
           AS task_domain,
       'default' AS scope_key,
       ['code', 'finance', 'medical', 'default', 'customer_service', 'default'][1 + i % 6]
           AS profile,
       3 + i % 9 AS n_steps, 2 AS unique_types, 0 AS error_recovery, 1 + i % 4 AS unique_tools,
       complexity, novelty, tool_diversity, outcome_confidence, 0.25 AS w_complexity,
       0.35 AS w_novelty,
       0.15 AS w_tool_diversity, 0.25 AS w_outcome_confidence,
       0.25 * complexity + 0.35 * novelty + 0.15 * tool_diversity + 0.25 * outcome_confidence
           AS score,
       [] AS overrides, 'embedding' AS novelty_source, 1000 AS novelty_window,
       score > 0.7 AS shareable, 'c' AS config_hash
FROM (
    SELECT i, pow(random(), 3) AS skew, random() AS complexity, pow(random(), 2) AS novelty,
           random() AS tool_diversity, random() AS outcome_confidence
    FROM range($n) AS t(i)
)
"""

_OTHERS = f"""
INSERT INTO trace_rows BY NAME
SELECT trace_id, content_hash, created_at, agent_id, task_domain,
       outcome_confidence + 0.5 * (random() - 0.5) > 0.5 AS success, '' AS objective,
       outcome_confidence AS confidence, [] AS steps, 'h' AS text_sha,
       'day.jsonl' AS source_file, 0 AS row_number, run_id
FROM score_rows WHERE run_seq <= {DAYS};
INSERT INTO confidence_trace_rows BY NAME
SELECT trace_id, 'derived' AS source, 'h' AS input_hash, 'c' AS config_hash, n_steps AS steps,
       outcome_confidence AS aggregate, 'mean' AS method,
       CASE WHEN outcome_confidence > 0.85 THEN 'SILENT' WHEN outcome_confidence > 0.5
            THEN 'NOTIFY' WHEN outcome_confidence > 0.15 THEN 'CONFIRM' ELSE 'ESCALATE' END
           AS level,
       'aggregate ' || round(outcome_confidence, 2) AS reason, 'none' AS recommended_action,
       [] AS penalties, run_id, created_at AS computed_at
FROM score_rows WHERE run_seq <= {DAYS};
INSERT INTO judge_results BY NAME
SELECT 'judge-' || (run_seq % {DAYS}) AS run_id, run_seq, trace_id AS item_id,
       'traces' AS source, m AS metric, trace_id || m AS cache_key,
       CASE WHEN complexity < 0.03 THEN 'error' ELSE 'ok' END AS status,
       CASE WHEN complexity < 0.03 THEN NULL ELSE round(100 * tool_diversity) END AS score,
       'gpt-test' AS model, 'v1' AS prompt_version, '{{}}' AS parameters, 900 AS input_tokens,
       60 AS output_tokens, 800.0 AS latency_ms, 1 AS attempts, 0.0004 AS cost_usd,
       'live' AS mode, 'c' AS config_hash, created_at + INTERVAL 1 HOUR AS judged_at
FROM score_rows, (VALUES ('Clarity'), ('Coverage')) AS v(m)
WHERE run_seq <= {DAYS} AND hash(trace_id) % 100 = 0;
INSERT INTO runs BY NAME
SELECT 'run-' || d AS run_id, 1 + d AS run_seq, 'score_traces' AS flow, 'completed' AS status,
       TIMESTAMPTZ '2026-01-01 02:00:00+00' + to_days(d) AS started_at,
       TIMESTAMPTZ '2026-01-01 02:40:00+00' + to_days(d) AS finished_at,
       TIMESTAMPTZ '2026-01-01 02:40:00+00' + to_days(d) AS published_at,
       TIMESTAMPTZ '2026-01-01 02:40:00+00' + to_days(d) AS levels_published_at,
       $per_day AS rows_read, $per_day * 99 // 100 AS rows_scored,
       $per_day // 100 AS rows_quarantined,
       json_object('read and validate', 300 + d, 'embed', 1500, 'replay', 200, 'score', 90,
                   'commit', 60) AS timings
FROM range({DAYS}) AS t(d);
INSERT INTO quarantine BY NAME
SELECT 'run-' || (i % {DAYS}) AS run_id, 'day.jsonl' AS file, 'h' AS file_hash,
       i AS row_number, NULL AS trace_id,
       ['invalid_json', 'missing_field', 'bad_timestamp', 'duplicate_id'][1 + i % 4] AS rule,
       'synthetic' AS reason
FROM range($n // 100) AS t(i);
INSERT INTO latest_score_rows BY NAME {latest_scores_select("score_rows")};
"""


def synthetic_database(n: int) -> Path:
    """The database of `n` synthetic traces (built once, reused)."""
    path = OUT_DIR / f"report-{n}.duckdb"
    if path.exists():
        return with_latest_rows(path)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    DuckDBStore(partial).close()  # the schema
    con = duckdb.connect(str(partial))
    try:
        con.execute("SET TimeZone = 'UTC'; SELECT setseed(0.17)")
        con.execute(_SCORES, {"n": n, "rescored": n // 20})
        for statement in _OTHERS.split(";\n"):
            if statement.strip():
                params = {"n": n, "per_day": n // DAYS}
                used = {k: v for k, v in params.items() if f"${k}" in statement}
                con.execute(statement, used)
        # A new file's `latest_trace_rows` is empty and no run marked it pending: the rows
        # written by SQL above are folded in here, as a run's publication would.
        rebuild(con)
        con.execute("CHECKPOINT")
    finally:
        con.close()
    partial.rename(path)
    return with_latest_rows(path)


def with_latest_rows(path: Path) -> Path:
    """The database `path` brought to this version's schema, its `latest_trace_rows` holding
    every stored trace: its rows are written by SQL here, not by runs' publications, and a
    database built by an older version is reused."""
    store = DuckDBStore(path)
    try:
        if not is_current(store.rows):
            with store.transaction() as con:
                rebuild(con)
    finally:
        store.close()
    return path


def measure(n: int, db: Path, loads: int) -> dict[str, float | int]:
    """Seconds to write the report, its bytes, and the seconds Chromium took to draw it."""
    out = OUT_DIR / f"report-{n}.html"
    started = time.perf_counter()
    data = write_report(db, out)
    build_s = time.perf_counter() - started
    outcomes = data.outcomes.cells if data.outcomes is not None else None
    labelled = 0 if outcomes is None else int(outcomes["good"].sum() + outcomes["failed"].sum())
    checks = [chromium_page.open_page(out) for _ in range(loads)]
    bad = [c for c in checks if c.errors or c.requests]
    if bad:
        raise SystemExit(f"the report of {n:,} traces logged {bad[0].errors} {bad[0].requests}")
    drawn = [c.drawn_s for c in checks]
    return {
        "traces": n,
        "build_s": round(build_s, 2),
        "bytes": out.stat().st_size,
        "open_s_median": round(statistics.median(drawn), 2),
        "open_s_all": [round(s, 2) for s in drawn],  # type: ignore[dict-item]
        "db_bytes": db.stat().st_size,
        "labelled": labelled,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default="5000,1000000,10000000", help="trace counts, comma-separated"
    )
    parser.add_argument("--loads", type=int, default=3, help="browser loads per report")
    add_common_args(parser)
    args = parser.parse_args()
    info, load = begin("bench_report: HTML report size and time, synthetic databases", args)
    rows = []
    for n in [int(size) for size in args.sizes.split(",")]:
        started = time.perf_counter()
        db = synthetic_database(n)
        print(f"{n:>12,} traces: database {db.stat().st_size / 1e6:,.0f} MB "
              f"(ready in {time.perf_counter() - started:.0f} s)")  # fmt: skip
        row = measure(n, db, args.loads)
        rows.append(row)
        print(
            f"{n:>12,} traces: report written in {row['build_s']:.1f} s, "
            f"{int(row['bytes']) / 1e6:.2f} MB (target < 5 MB), drawn by Chromium in "
            f"{row['open_s_median']:.2f} s median of {args.loads} (target < 3 s); levels "
            f"against outcomes over {int(row['labelled']):,} labelled traces"
        )
    end(info, load)
    save_result("bench_report", {"machine": info, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
