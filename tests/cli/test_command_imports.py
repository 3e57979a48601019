"""What a plain scoring command loads: `tracegrade score --no-embedder` without a judge
configuration neither imports the embedding model's packages (torch, sentence-transformers)
nor the judge's (pydantic-ai), nor the OTel span reader's (the format registry builds a reader
when a file of its format is read), so a small nightly file is not charged their start-up. A
rerun with nothing new loads no Polars, no Arrow, none of the scoring steps and no pydantic
(with no configuration file given, it needs only the default configuration's hash); nor does the
report, which neither loads Plotly's Python (the page needs only each figure's JSON)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from transforms.synth.traces import synthetic_traces, to_json_records

_PROBE = """
import json, sys
from tracegrade.cli.app import main
status = main(sys.argv[1:])
heavy = (
    "torch", "sentence_transformers", "pydantic_ai", "openai", "anthropic",
    "storage.spans.otel_readers", "opentelemetry", "polars", "pyarrow", "pipelines.scoring_steps",
    "storage.inputs.readers", "plotly", "narwhals", "pydantic",
)
print(json.dumps({"status": status, "loaded": sorted(m for m in heavy if m in sys.modules)}))
"""


def _command(*args: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    result["stdout"] = done.stdout
    return result


def _score(export: Path, db: Path) -> dict[str, object]:
    return _command("score", str(export), "--db", str(db), "--no-embedder")


def test_score_without_embedder_or_judge_loads_neither_model_stack(tmp_path: Path) -> None:
    export = tmp_path / "day.jsonl"
    records = to_json_records(synthetic_traces(12, seed=5))
    export.write_text("".join(json.dumps(record) + "\n" for record in records))
    first = _score(export, tmp_path / "s.duckdb")
    assert first["status"] == 0
    assert set(first["loaded"]) == {"polars", "pyarrow", "pipelines.scoring_steps"} | {
        "storage.inputs.readers",
        "pydantic",
    }, first["stdout"]
    again = _score(export, tmp_path / "s.duckdb")
    assert (again["status"], again["loaded"]) == (0, []), again["stdout"]
    assert "# tracegrade: nothing new" in str(again["stdout"])


def test_the_report_loads_no_data_frames_and_no_plotly_objects(tmp_path: Path) -> None:
    export = tmp_path / "day.jsonl"
    records = to_json_records(synthetic_traces(30, seed=3))
    export.write_text("".join(json.dumps(record) + "\n" for record in records))
    assert _score(export, tmp_path / "s.duckdb")["status"] == 0
    out = tmp_path / "r.html"
    report = _command("report", "--db", str(tmp_path / "s.duckdb"), "--out", str(out))
    assert (report["status"], report["loaded"]) == (0, []), report["stdout"]
    page = out.read_text()
    assert page.count("Plotly.newPlot(") >= 5 and "30 scored traces" in page
