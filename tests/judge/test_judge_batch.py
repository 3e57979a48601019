"""Batch mode end to end against a fake batch-capable model: submit, interruption, collect in a
later run, and no request submitted twice."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import query_rows
from judge_helpers import (
    FakeBatchProvider,
    fake_batch_model,
    items,
    judge_batch_once,
    write_config,
)
from pydantic_ai.models import infer_model

from transforms.errors import JudgeConfigError

CONFIG = """
mode = "batch"

[[metrics]]
name = "Coverage"
weight = 0.5
model = "openai:gpt-5"

[[metrics]]
name = "Relevance"
weight = 0.5
model = "openai:gpt-5"

[prices."openai:gpt-5"]
input_per_mtok = 2.0
output_per_mtok = 10.0
batch_discount = 0.5
"""


def test_submit_interrupt_collect_later_without_duplicates(tmp_path: Path) -> None:
    provider = FakeBatchProvider()
    db = tmp_path / "j.duckdb"
    config = write_config(tmp_path, CONFIG)
    frame = items([(f"i{n}", "q", f"answer {n}") for n in range(4)] + [("blank", "q", "")])

    # Run 1 submits 8 requests (4 items x 2 metrics) in batches of at most 3, then ends: the
    # process holding the batches is gone; only their handles in DuckDB remain.
    first = judge_batch_once(db, config, frame, fake_batch_model(provider))
    assert len(provider.submitted) == 8 and first.batches_submitted == 3
    assert first.submissions_pending == 4 and first.submissions_rejected == 1  # the blank one
    assert query_rows(db, "SELECT count(*) FROM judge_batches WHERE status = 'submitted'") == [(3,)]
    handle = query_rows(
        db, "SELECT handle->>'$.id', handle->>'$.status' FROM judge_batches LIMIT 1"
    )[0]
    assert str(handle[0]).startswith("batch_") and handle[1] == "in_progress"

    # Run 2, another model instance, batches still running: nothing is submitted again.
    second = judge_batch_once(db, config, frame, fake_batch_model(provider))
    assert len(provider.submitted) == 8
    assert second.batches_pending == 3 and second.batches_submitted == 0

    # The provider finishes; run 3 collects (a collect-only run, as the judge_collect flow).
    provider.finish()
    third = judge_batch_once(db, config, frame, fake_batch_model(provider), submit=False)
    assert third.batches_collected == 3 and len(provider.submitted) == 8
    assert query_rows(db, "SELECT count(*) FROM judge_batches WHERE status = 'collected'") == [(3,)]
    rows = query_rows(
        db,
        "SELECT mode, status, score, attempts, input_tokens, cost_usd FROM judge_results "
        "WHERE item_id <> 'blank'",
    )
    assert len(rows) == 8
    # At the batch price: (100 * 2 + 20 * 10) / 1e6 * 0.5
    assert set(rows) == {("batch", "ok", 70.0, 1, 100, 0.0002)}
    assert query_rows(
        db, "SELECT item_id, status, overall_score FROM latest_judge_scores ORDER BY 1"
    ) == [
        ("blank", "invalid_input", None),
        ("i0", "ok", 70.0),
        ("i1", "ok", 70.0),
        ("i2", "ok", 70.0),
        ("i3", "ok", 70.0),
    ]

    # Run 4 over the same input: everything is stored, nothing is submitted or written.
    before = query_rows(db, "SELECT count(*) FROM judge_results")
    fourth = judge_batch_once(db, config, frame, fake_batch_model(provider))
    assert fourth.batches_submitted == 0 and fourth.calls == 0 and len(provider.submitted) == 8
    assert query_rows(db, "SELECT count(*) FROM judge_results") == before


def test_a_batch_run_collects_then_submits_only_new_items(tmp_path: Path) -> None:
    provider = FakeBatchProvider()
    db = tmp_path / "j.duckdb"
    config = write_config(tmp_path, CONFIG)
    judge_batch_once(db, config, items([("a", "q", "x")]), fake_batch_model(provider))
    provider.finish()
    result = judge_batch_once(
        db, config, items([("a", "q", "x"), ("b", "q", "y")]), fake_batch_model(provider)
    )
    assert result.batches_collected == 1 and result.batches_submitted == 1
    assert len(provider.submitted) == 4
    assert result.submissions_ok == 1 and result.submissions_pending == 1


def test_a_model_without_a_batch_api_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # OpenAI's chat completions model has no batch API in pydantic-ai (its Responses one has).
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    model = infer_model("openai-chat:judge")
    with pytest.raises(
        JudgeConfigError, match='has no batch API in pydantic-ai; use mode = "live"'
    ):
        judge_batch_once(
            tmp_path / "j.duckdb", write_config(tmp_path, CONFIG), items([("a", "q", "x")]), model
        )
    assert query_rows(tmp_path / "j.duckdb", "SELECT count(*) FROM judge_batches") == [(0,)]


def test_identical_submissions_are_submitted_once(tmp_path: Path) -> None:
    provider = FakeBatchProvider()
    db = tmp_path / "j.duckdb"
    config = write_config(tmp_path, CONFIG)
    frame = items([("a", "q", "Done."), ("b", "q", "Done.")])
    judge_batch_once(db, config, frame, fake_batch_model(provider))
    assert len(provider.submitted) == 2  # two metrics, once
    provider.finish()
    result = judge_batch_once(db, config, frame, fake_batch_model(provider))
    assert len(provider.submitted) == 2 and result.submissions_ok == 2
    assert query_rows(db, "SELECT item_id, count(*) FROM judge_results GROUP BY 1 ORDER BY 1") == [
        ("a", 2),
        ("b", 2),
    ]
