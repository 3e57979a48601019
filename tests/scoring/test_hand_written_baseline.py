"""bench/hand_written.sql, issue 48's hand-written baseline, scores as tracegrade does: the
script run by the duckdb CLI on a Parquet export gives every trace the value score (and C, D,
O) a run stores, so the benchmark that times a run against it compares like with like."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import query_rows, run_pipeline

from transforms.synth.traces import synthetic_traces

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "hand_written.sql"
DUCKDB_CLI = Path(sys.executable).with_name("duckdb")

COMPARED = """
SELECT count(*) FILTER (WHERE s.trace_id IS NULL OR r.trace_id IS NULL),
       count(*) FILTER (WHERE s.score IS DISTINCT FROM r.score
         OR s.complexity IS DISTINCT FROM r.complexity
         OR s.tool_diversity IS DISTINCT FROM r.tool_diversity
         OR s.outcome_confidence IS DISTINCT FROM r.outcome_confidence),
       count(*)
FROM run.latest_scores s FULL JOIN script.scores r USING (trace_id)
"""


def _cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(DUCKDB_CLI), *arguments],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_the_hand_written_script_stores_the_scores_a_run_stores(tmp_path: Path) -> None:
    # The built-in profiles' domains, a missing domain and names without a profile.
    export = tmp_path / "export.parquet"
    synthetic_traces(600, seed=48).write_parquet(export)
    ours, theirs = tmp_path / "run.duckdb", tmp_path / "script.duckdb"
    run_pipeline([export], ours, embed=False)

    done = _cli(
        str(theirs), "-bail", "-cmd", f"SET VARIABLE traces = ['{export}']", "-f", str(SCRIPT)
    )

    assert done.returncode == 0, done.stderr
    ((stored, domains),) = query_rows(
        theirs, "SELECT count(*), count(DISTINCT metadata.task_domain) FROM traces"
    )
    assert (stored, domains) == (600, 7)
    attach = f"ATTACH '{ours}' AS run (READ_ONLY); ATTACH '{theirs}' AS script (READ_ONLY);"
    compared = _cli(":memory:", "-csv", "-noheader", "-c", attach + COMPARED)
    assert compared.returncode == 0, compared.stderr
    unmatched, differ, rows = map(int, compared.stdout.strip().splitlines()[-1].split(","))
    assert (unmatched, differ, rows) == (0, 0, 600)
