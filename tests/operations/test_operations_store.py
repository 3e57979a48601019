"""Reading eval case files and the DuckDB tables of the operation scorers."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from operations_helpers import CASES_FILE, case, op

from storage.errors import InputError
from storage.operations.cases import read_eval_cases
from storage.operations.store import (
    case_hashes,
    commit_operation_results,
    latest_operation_results,
    stored_case_hashes,
)
from storage.store.duckdb_store import DuckDBStore
from transforms.operations.model import CASE_SCHEMA


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_reads_jsonl_and_parquet_alike(tmp_path: Path) -> None:
    rows = [case([op("delete", "b1")], case_id="a"), case(case_id="b")]
    write_jsonl(tmp_path / "one.jsonl", rows[:1])
    pl.DataFrame(rows[1:], schema=CASE_SCHEMA).drop("duration_ms").write_parquet(
        tmp_path / "two.parquet"
    )
    read = read_eval_cases([tmp_path])
    assert read.cases["case_id"].to_list() == ["a", "b"]
    assert read.cases["row_number"].to_list() == [1, 1]
    assert read.cases.schema == pl.Schema(
        {**CASE_SCHEMA, "source_file": pl.String, "row_number": pl.Int64}
    )
    assert read.files["cases"].to_list() == [1, 1]
    assert read.files["content_hash"].str.len_chars().to_list() == [64, 64]


def test_reads_the_shipped_cases_and_ignores_metadata(tmp_path: Path) -> None:
    assert read_eval_cases([CASES_FILE]).cases.height == 10
    row = {**case(), "metadata": {"author": "qa", "tags": ["smoke"]}}
    assert read_eval_cases([write_jsonl(tmp_path / "m.jsonl", [row])]).cases.height == 1


@pytest.mark.parametrize(
    ("content", "rule", "message"),
    [
        ('{"case_id": "a"}\n{broken\n', "invalid_json", "line 2 is not valid JSON"),
        ('{"case_id": "a"}\n[1, 2]\n', "not_an_object", "line 2 is not a JSON object"),
        (
            '{"case_id": "a"}\n{"case_id": "b", "actual_operations": [{"target_index": "2"}]}\n',
            "schema_mismatch",
            "line 2 does not fit the eval case schema",
        ),
        (
            '{"case_id": "a"}\n{"case_id": "b", "expected_operation": []}\n',
            "unknown_field",
            "unknown keys expected_operation",
        ),
        (
            '{"case_id": "a"}\n'
            '{"case_id": "b", "actual_operations": [{"type": "update", "targetBlockId": "b1"}]}\n',
            "unknown_field",
            "unknown keys actual_operations.targetBlockId",
        ),
        ('{"case_id": "a"}\n{"original_blocks": []}\n', "missing_case_id", "line 2 has no case_id"),
        (
            '{"case_id": "b"}\n{"case_id": "a"}\n{"case_id": "a"}\n',
            "duplicate_case_id",
            "case_id a appears again later in the input",
        ),
        ('{"case_id": "a"}\n' + "[" * 10_000 + "]" * 10_000 + "\n", "too_deep", "line 2 nests"),
        ('{"case_id": "a"}\n{"case_id": "b", "x": "\\ud800"}\n', "invalid_text", "surrogate"),
    ],
)
def test_a_bad_line_is_quarantined_with_its_rule_and_the_rest_is_read(
    tmp_path: Path, content: str, rule: str, message: str
) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(content)
    read = read_eval_cases([path])
    (rejected,) = read.rejected.to_dicts()
    assert rejected["rule"] == rule and message in rejected["reason"]
    assert rejected["source_file"] == str(path) and rejected["row_number"] is not None
    assert read.cases["case_id"].to_list() in (["a"], ["b", "a"])


def test_a_bom_is_read_past(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(case(case_id="a")).encode() + b"\n")
    read = read_eval_cases([path])
    assert read.cases["case_id"].to_list() == ["a"] and read.rejected.is_empty()


def test_paths_that_name_nothing(tmp_path: Path) -> None:
    (tmp_path / "cases.csv").write_text("case_id\n")
    for given, message in (
        ([tmp_path / "cases.csv"], "unsupported extension"),
        ([tmp_path / "missing.jsonl"], "does not exist"),
        ([str(tmp_path / "*.jsonl")], "matches no eval case file"),
        ([], "no eval case paths given"),
    ):
        with pytest.raises(InputError, match=message):
            read_eval_cases(given)


def test_case_hash_changes_with_any_field_only() -> None:
    frame = pl.DataFrame(
        [case(case_id="a"), case(case_id="a"), case(case_id="a", duration_ms=1.0)],
        schema=CASE_SCHEMA,
    )
    hashes = case_hashes(frame).to_list()
    assert hashes[0] == hashes[1] != hashes[2]


def _rows(run: str, seq: int, passed: bool) -> tuple[pl.DataFrame, pl.DataFrame]:
    identity = {"run_id": run, "run_seq": seq, "scorer_set": "standard"}
    cases = pl.DataFrame(
        [
            {
                **identity,
                "case_id": "a",
                "set_hash": "h",
                "case_hash": f"c{seq}",
                "source_file": "f",
                "row_number": 1,
                "weighted_average": 0.5,
                "passed": passed,
                "failed_scorers": [] if passed else ["content-quality"],
                "error": None,
            }
        ],
        schema_overrides={"failed_scorers": pl.List(pl.String), "error": pl.String},
    )
    scores = pl.DataFrame(
        [
            {
                **identity,
                "case_id": "a",
                "scorer": "content-quality",
                "score": 0.5,
                "threshold": 0.6,
                "passed": passed,
                "weight": 1.0,
                "details": '{"matchedPatterns": 1}',
            }
        ]
    )
    return cases, scores


def test_commit_is_one_transaction_and_latest_views_pick_the_newest(tmp_path: Path) -> None:
    DuckDBStore(tmp_path / "x.duckdb").close()  # a second open creates the schema again, harmlessly
    with DuckDBStore(tmp_path / "x.duckdb") as store:
        files = pl.DataFrame(
            {"run_id": ["r1"], "path": ["f"], "size": [1], "content_hash": ["h"], "cases": [1]}
        )
        for run, seq, passed in (("r1", 1, False), ("r2", 2, True)):
            cases, scores = _rows(run, seq, passed)
            cases.write_parquet(tmp_path / f"{run}c.parquet")
            scores.write_parquet(tmp_path / f"{run}s.parquet")
            commit_operation_results(
                store, tmp_path / f"{run}c.parquet", tmp_path / f"{run}s.parquet", files
            )
        latest_cases, latest_scores = latest_operation_results(
            store, "standard", pl.Series(["a", "zz"])
        )
        assert latest_cases.select("run_id", "passed", "failed_scorers").rows() == [
            ("r2", True, [])
        ]
        assert latest_scores["run_id"].to_list() == ["r2"]
        assert stored_case_hashes(store, "standard", "h").rows() == [("a", "c2")]
        assert stored_case_hashes(store, "standard", "other").height == 0
        assert store.sql("SELECT count(*) AS n FROM operation_files")["n"][0] == 1
        assert (
            store.sql("SELECT details->>'$.matchedPatterns' AS m FROM operation_scores LIMIT 1")[
                "m"
            ][0]
            == "1"
        )
        cases, scores = _rows("r3", 3, True)
        cases.write_parquet(tmp_path / "r3c.parquet")
        scores.with_columns(score=pl.lit(None, pl.Float64)).write_parquet(tmp_path / "r3s.parquet")
        with pytest.raises(Exception, match="NOT NULL"):
            commit_operation_results(
                store, tmp_path / "r3c.parquet", tmp_path / "r3s.parquet", files
            )
        assert store.sql("SELECT count(*) AS n FROM operation_cases")["n"][0] == 2
