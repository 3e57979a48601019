"""Flat Parquet inputs (confidence factors, eval cases): read, check, cast to the schema."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from storage.confidence.factors import read_factors_table
from storage.errors import InputError
from storage.inputs.flat_parquet import conform_to_schema, read_parquet_input
from storage.operations.cases import read_eval_cases

SCHEMA: dict[str, pl.DataType] = {"trace_id": pl.String(), "step_index": pl.Int64()}


def test_missing_columns_become_nulls_and_present_ones_are_cast(tmp_path: Path) -> None:
    raw = pl.DataFrame({"step_index": [1, 2]}, schema={"step_index": pl.Int32})
    got = conform_to_schema(raw, SCHEMA, path=tmp_path / "f.parquet", problem="p", fix="f")
    expected = pl.DataFrame({"trace_id": [None, None], "step_index": [1, 2]}, schema=SCHEMA)
    assert_frame_equal(got, expected)


def test_a_column_that_cannot_be_cast_names_file_problem_and_fix(tmp_path: Path) -> None:
    raw = pl.DataFrame({"trace_id": ["t"], "step_index": ["first"]})
    with pytest.raises(InputError) as caught:
        conform_to_schema(raw, SCHEMA, path=tmp_path / "f.parquet", problem="bad", fix="do x")
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'f.parquet'}: bad (")
    assert message.endswith("); do x")


def test_a_file_that_is_not_parquet_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"not parquet at all")
    with pytest.raises(InputError, match="broken.parquet: not a readable Parquet file"):
        read_parquet_input(path)


def test_factors_parquet_with_a_wrong_type_names_the_confidence_docs(tmp_path: Path) -> None:
    path = tmp_path / "factors.parquet"
    pl.DataFrame({"trace_id": ["t1"], "step_index": ["one"]}).write_parquet(path)
    with pytest.raises(InputError, match="a column has the wrong type .*docs/confidence.md"):
        read_factors_table([str(path)])


def test_factors_parquet_rows_are_numbered_from_one(tmp_path: Path) -> None:
    path = tmp_path / "factors.parquet"
    pl.DataFrame({"trace_id": ["t1", "t1"], "step_index": [0, 1]}).write_parquet(path)
    read = read_factors_table([str(path)])
    assert read.rows["row_number"].to_list() == [1, 2]
    assert read.rows["llm_self_eval"].null_count() == 2


def test_eval_case_parquet_that_is_not_parquet_is_quarantined_as_a_file(tmp_path: Path) -> None:
    path = tmp_path / "cases.parquet"
    path.write_bytes(b"PAR1 but not really")
    (rejected,) = read_eval_cases([path]).rejected.to_dicts()
    assert rejected["rule"] == "unreadable_file" and rejected["row_number"] is None
    assert "cases.parquet: not a readable Parquet file" in rejected["reason"]


def test_eval_case_parquet_with_a_wrong_type_names_the_operations_docs(tmp_path: Path) -> None:
    path = tmp_path / "cases.parquet"
    pl.DataFrame({"case_id": ["c1"], "original_blocks": [7]}).write_parquet(path)
    (rejected,) = read_eval_cases([path]).rejected.to_dicts()
    assert rejected["rule"] == "schema_mismatch"
    assert re.search("not a Parquet file of eval cases .*docs/operations.md", rejected["reason"])
