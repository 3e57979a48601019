"""`tracegrade export langfuse-scores` on the real Langfuse exports of tests/data/langfuse: the
scores name the traces and observations by Langfuse's own ids and carry the stored values."""

from __future__ import annotations

import json
from pathlib import Path

from storage.spans.langfuse import _id, original_ids
from storage.store.duckdb_store import DuckDBStore
from tracegrade.cli.app import main
from transforms.otel import otel_trace_id

EXPORTS = Path(__file__).resolve().parents[1] / "data" / "langfuse"


def _file_ids() -> tuple[set[str], set[str]]:
    traces, observations = set(), set()
    for path in EXPORTS.glob("*.json"):
        value = json.loads(path.read_text())
        for item in value if isinstance(value, list) else [value]:
            trace = item.get("trace", item)
            traces.add(trace["id"])
            observations |= {o["id"] for o in item["observations"]}
    return traces, observations


def test_the_scores_file_names_langfuse_ids_and_holds_the_stored_values(tmp_path: Path) -> None:
    db, out = tmp_path / "scores.duckdb", tmp_path / "scores.jsonl"
    assert main(["score", str(EXPORTS), "--db", str(db), "--no-embedder"]) == 0
    args = ["export", "langfuse-scores", str(EXPORTS), "--db", str(db), "--out", str(out)]
    assert main(args) == 0
    bodies = [json.loads(line) for line in out.read_text().splitlines()]
    traces, observations = _file_ids()
    assert {b["traceId"] for b in bodies} == traces  # every trace of the six files
    with DuckDBStore(db, read_only=True) as store:
        scores = dict(store.rows("SELECT trace_id, score FROM latest_scores"))
        levels = dict(store.rows("SELECT trace_id, level FROM confidence_traces"))
        steps = store.rows(
            "SELECT count(DISTINCT (trace_id, source_step_id)) FROM confidence_steps "
            "WHERE source_step_id IS NOT NULL"
        )[0][0]
    for body in bodies:
        ours = otel_trace_id(_id(body["traceId"], 32) or "")
        if body["name"] == "tracegrade.value":
            assert body["value"] == scores[ours] and body["dataType"] == "NUMERIC"
        elif body["name"] == "tracegrade.level":
            assert body["value"] == levels[ours] and body["dataType"] == "CATEGORICAL"
        elif body["name"] == "tracegrade.step_confidence":
            assert body["observationId"] in observations
    named = [b["name"] for b in bodies]
    assert named.count("tracegrade.value") == named.count("tracegrade.level") == len(traces)
    assert named.count("tracegrade.step_confidence") == steps  # one per step, not plan step
    assert len({b["id"] for b in bodies}) == len(bodies)
    first = out.read_text()
    assert main(args) == 0 and out.read_text() == first  # the same ids: Langfuse updates


def test_a_langfuse_uuid_is_given_back_as_langfuse_wrote_it() -> None:
    trace = {
        "id": "7A38EDD8-123D-B47A-D8DC-B8AA4C5E3926",
        "timestamp": "2026-01-01T00:00:00Z",
        "observations": [{"id": "obs-1", "type": "SPAN", "traceId": None}],
    }
    ids = original_ids(trace)
    assert ids[_id(trace["id"], 32) or ""] == trace["id"]
    assert ids[_id("obs-1", 16) or ""] == "obs-1"


def test_gzipped_exports_give_the_same_scores_file(tmp_path: Path) -> None:
    # Langfuse's scheduled export is gzipped unless told not to: scored and exported as it is
    import gzip

    packed = tmp_path / "exports"
    packed.mkdir()
    for path in EXPORTS.glob("*.json"):
        (packed / (path.name + ".gz")).write_bytes(gzip.compress(path.read_bytes()))
    said = {}
    for name, folder in (("plain", EXPORTS), ("packed", packed)):
        db, out = tmp_path / f"{name}.duckdb", tmp_path / f"{name}.jsonl"
        assert main(["score", str(folder), "--db", str(db), "--no-embedder"]) == 0
        export = ["export", "langfuse-scores", str(folder), "--db", str(db), "--out", str(out)]
        assert main(export) == 0
        said[name] = out.read_text()
    assert said["packed"] == said["plain"] and said["plain"].count("\n") > 6
