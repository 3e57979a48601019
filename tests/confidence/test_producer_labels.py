"""Labels that name traces by the id their producer gave them (`storage.confidence.labels`): a
team's human verdicts live in Langfuse as scores on Langfuse's trace ids, not on tracegrade's.
The real Langfuse downloads of tests/data, scored; their traces labelled from a Langfuse scores
export by the documented SQL (docs/confidence.md, "Labels from Langfuse scores")."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import duckdb
import pytest

from storage.spans.langfuse import trace_hex
from tracegrade.cli import main
from transforms.otel import otel_trace_id

EXPORTS = Path(__file__).resolve().parents[1] / "data" / "langfuse"


def _langfuse_ids() -> list[str]:
    ids = []
    for path in sorted(EXPORTS.glob("*.json")):
        value = json.loads(path.read_text())
        for item in value if isinstance(value, list) else [value]:
            ids.append(item.get("trace", item)["id"])
    return ids


def _score_row(trace: str, value: float, name: str = "correctness") -> dict[str, object]:
    """A row of the blob storage export's scores table (ClickHouse's names)."""
    return {
        "id": f"s-{trace}-{name}",
        "timestamp": "2026-12-07 00:00:00.000",
        "project_id": "a-project",
        "environment": "default",
        "trace_id": trace,
        "observation_id": None,
        "name": name,
        "value": value,
        "source": "ANNOTATION",
        "comment": None,
        "data_type": "BOOLEAN",
        "string_value": "True" if value else "False",
    }


def test_labels_named_by_langfuse_s_trace_ids_label_the_stored_traces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "lf.duckdb"
    assert main(["score", str(EXPORTS), "--db", str(db), "--no-embedder"]) == 0
    ids = _langfuse_ids()
    verdicts = {trace: index % 2 for index, trace in enumerate(ids)}
    rows = [_score_row(trace, value) for trace, value in verdicts.items()]
    rows.append(_score_row(ids[0], 0.2, name="helpfulness"))  # another score: not the label
    rows.append(_score_row("f" * 32, 1))  # a trace of another export: no stored trace
    scores = tmp_path / "scores" / "2026-12-07T00-00-00.jsonl.gz"
    scores.parent.mkdir()
    scores.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))

    labels = tmp_path / "labels.csv"  # the SQL of docs/confidence.md, as a user runs it
    with duckdb.connect() as con:
        con.execute(
            "COPY (SELECT trace_id, value::INT AS label "
            f"FROM read_json('{tmp_path}/scores/*.jsonl.gz') WHERE name = 'correctness') "
            f"TO '{labels}' (HEADER)"
        )
    ours = tmp_path / "ours.csv"  # the same verdicts on tracegrade's own ids
    ours.write_text(
        "trace_id,label\n"
        + "".join(f"{otel_trace_id(trace_hex(t) or '')},{v}\n" for t, v in verdicts.items())
    )

    printed = {}
    for name, path in (("langfuse", labels), ("ours", ours)):
        capsys.readouterr()
        status = main(["confidence", "--db", str(db), "--evaluate", str(path)])
        printed[name] = (status, capsys.readouterr().out)
    assert printed["langfuse"] == printed["ours"]
    status, text = printed["langfuse"]
    assert status == 0 and f"| traces with a level and a label | {len(verdicts)} |" in text, text


def test_a_producer_id_written_another_way_names_the_same_trace(tmp_path: Path) -> None:
    # the Langfuse UI shows the id in lower case; a Jaeger or Phoenix screen may show it in
    # upper case, a UUID with dashes: each is the same OTel trace id
    db = tmp_path / "lf.duckdb"
    assert main(["score", str(EXPORTS), "--db", str(db), "--no-embedder"]) == 0
    hex_ids = [t for t in _langfuse_ids() if len(t) == 32][:3]
    written = [hex_ids[0].upper(), f"0x{hex_ids[1]}", "-".join((hex_ids[2][:8], hex_ids[2][8:]))]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"trace_id": t, "label": 1}) + "\n" for t in written))
    from storage.confidence.labels import file_labels
    from storage.store.duckdb_store import DuckDBStore

    with DuckDBStore(db, read_only=True) as store:
        found = {trace for trace, _ in store.rows(file_labels(store, labels))}
    assert found == {otel_trace_id(t) for t in hex_ids}
