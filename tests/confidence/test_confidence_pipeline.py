"""Derived mode over the demo archive in the store: every trace gets a level, re-runs are no-ops."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import query_rows, run_pipeline, table_snapshot

from pipelines import confidence_stages
from storage.store.registry import held_store
from tracegrade.demo import write_demo_archive
from transforms.confidence.per_trace import reference_trace_confidence
from transforms.config.confidence import ConfidenceConfig, Thresholds


@pytest.fixture(scope="module")
def scored_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo archive scored (no embedder) into a database, kept as a template."""
    folder = tmp_path_factory.mktemp("demo")
    write_demo_archive(folder / "archive", n_traces=600, days=6, seed=5)
    db = folder / "template.duckdb"
    run_pipeline([folder / "archive"], db, embed=False)
    return db


@pytest.fixture
def db(scored_archive: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "scores.duckdb"
    shutil.copy(scored_archive, copy)
    return copy


def derive(db: Path, config: ConfidenceConfig, *, force: bool = False) -> dict[str, int]:
    work = db.parent / "work"
    work.mkdir(exist_ok=True)
    with held_store(db) as store:
        run = store.begin_run(
            "confidence_traces", version="t", model=None, config={}, config_hash="h"
        )
        return confidence_stages.derived_stage(store, run.run_id, work, config, force=force)


def test_every_stored_trace_gets_the_reference_level(db: Path) -> None:
    config = ConfidenceConfig()
    counts = derive(db, config)
    ((stored,),) = query_rows(db, "SELECT count(*) FROM traces")
    assert counts == {"confidence_traces": stored, "confidence_unchanged": 0}
    rows = query_rows(
        db,
        "SELECT t.steps, t.confidence, t.result_summary, t.objective, c.aggregate, c.level, "
        "c.reason, c.steps, "
        "c.config_hash, c.input_hash = t.content_hash "
        "FROM traces t JOIN confidence_traces c USING (trace_id)",
    )
    assert len(rows) == stored
    for row in rows:
        steps, confidence, answer, objective, aggregate, level, reason, n_steps = row[:8]
        config_hash, same = row[8:]
        expected = reference_trace_confidence(steps, confidence, config, answer, objective)
        assert aggregate == pytest.approx(expected.aggregate, abs=1e-12)
        assert (level, reason, n_steps) == (
            expected.level.value,
            expected.reason,
            len(expected.steps),
        )
        assert config_hash == config.config_hash and same
    levels = dict(query_rows(db, "SELECT level, count(*) FROM confidence_traces GROUP BY level"))
    assert set(levels) == {"SILENT", "NOTIFY", "CONFIRM", "ESCALATE"}
    ((step_rows, answers, tools, thoughts),) = query_rows(
        db,
        "SELECT count(*), count(*) FILTER (step_kind = 'answer'), "
        "count(*) FILTER (step_kind = 'tool_call'), count(*) FILTER (step_kind = 'thought') "
        "FROM confidence_steps",
    )
    ((tool_calls, reasoning),) = query_rows(
        db,
        "SELECT count(*) FILTER (s.type = 'tool_call' OR (s.type = 'error_recovery' AND "
        "s.tool_name IS NOT NULL)), count(*) FILTER (s.type = 'thought' OR "
        "(s.type = 'error_recovery' AND s.tool_name IS NULL)) "
        "FROM (SELECT unnest(steps) AS s FROM traces)",
    )
    # a call is a plan step of its own only when it failed or repeats an earlier call
    assert (answers, thoughts) == (stored, reasoning)
    assert 0 < tools < tool_calls
    assert step_rows == stored + tools + reasoning
    ((tz,),) = query_rows(db, "SELECT DISTINCT typeof(computed_at) FROM confidence_traces")
    assert tz == "TIMESTAMP WITH TIME ZONE"


def test_rerun_changes_nothing_and_new_config_rescores(db: Path) -> None:
    derive(db, ConfidenceConfig())
    before = table_snapshot(db)
    assert derive(db, ConfidenceConfig())["confidence_traces"] == 0
    assert table_snapshot(db) == before
    stricter = ConfidenceConfig(thresholds=Thresholds(silent=0.99, notify=0.95, confirm=0.9))
    counts = derive(db, stricter)
    assert counts["confidence_unchanged"] == 0
    ((escalated,),) = query_rows(
        db, "SELECT count(*) FILTER (level = 'ESCALATE') FROM confidence_traces"
    )
    assert escalated > 0
    ((rows,),) = query_rows(db, "SELECT count(*) FROM confidence_steps")
    ((expected,),) = query_rows(db, "SELECT sum(steps) FROM confidence_traces")
    assert rows == expected


def test_no_trace_that_records_a_failed_tool_call_is_told_to_proceed(db: Path) -> None:
    derive(db, ConfidenceConfig())
    rows = query_rows(
        db,
        "SELECT c.trace_id, c.level, c.penalties FROM confidence_traces c SEMI JOIN ("
        "SELECT trace_id, steps, generate_subscripts(steps, 1) AS i FROM traces) t "
        "ON t.trace_id = c.trace_id AND t.steps[t.i].type = 'tool_call' "
        "AND t.steps[t.i + 1].type = 'error_recovery'",
    )
    assert len(rows) > 50
    for trace_id, level, penalties in rows:
        assert level in ("CONFIRM", "ESCALATE"), trace_id
        assert any(p.startswith("tool_failures") for p in penalties), trace_id


def test_force_rescores_everything(db: Path) -> None:
    derive(db, ConfidenceConfig())
    ((stored,),) = query_rows(db, "SELECT count(*) FROM traces")
    assert derive(db, ConfidenceConfig(), force=True)["confidence_traces"] == stored


def test_evaluate_reads_labels_from_sql_and_files(db: Path, tmp_path: Path) -> None:
    import polars as pl

    from storage.confidence.labels import labelled_levels
    from storage.errors import InputError

    derive(db, ConfidenceConfig())
    ((stored, good),) = query_rows(db, "SELECT count(*), sum(success::INT) FROM traces")
    with held_store(db) as store:
        by_sql, missing = labelled_levels(store, "success::INT", "derived")
        assert missing == 0
        assert (sum(c.good for c in by_sql), sum(c.failed for c in by_sql)) == (good, stored - good)
        labels = store.sql("SELECT trace_id, success::INT AS label FROM traces ORDER BY 1 LIMIT 10")
        pl.concat([labels, labels]).write_csv(tmp_path / "labels.csv")  # twice: counted once
        by_file, missing = labelled_levels(store, str(tmp_path / "labels.csv"), "derived")
        assert (sum(c.good + c.failed for c in by_file), missing) == (10, stored - 10)
        assert sum(c.good for c in by_file) == labels["label"].sum()
        conflicting = labels.with_columns(label=1 - pl.col("label"))
        pl.concat([labels, conflicting]).write_csv(tmp_path / "both.csv")
        with pytest.raises(InputError, match="labelled both 0 and 1"):
            labelled_levels(store, str(tmp_path / "both.csv"), "derived")
        with pytest.raises(InputError, match="neither a readable labels file"):
            labelled_levels(store, "no_such_column", "derived")
        with pytest.raises(InputError, match="must be 0 or 1"):
            labelled_levels(store, "2", "derived")


def test_stale_traces_are_read_by_their_stretch_and_found_when_it_moved(db: Path) -> None:
    """Stale ids come in the order they are stored, with their place in trace_rows; a chunk
    reads only its stretch. A place that no longer holds its trace (another process rewrote
    the table) is a hint only: the trace is still read."""
    import polars as pl

    from storage.confidence.store import stale_derived_ids, stale_derived_traces

    with held_store(db) as store:
        written = stale_derived_ids(
            store, ConfidenceConfig().config_hash, db.parent / "stale.parquet", force=True
        )
        ids = pl.read_parquet(db.parent / "stale.parquet")
        assert written == ids.height == store.sql("SELECT count(*) AS n FROM traces")["n"][0]
        assert ids["place"].is_sorted() and ids["place"].null_count() == 0
        chunk = ids.slice(100, 50)
        whole = stale_derived_traces(store, ids.drop("place").slice(100, 50))
        assert stale_derived_traces(store, chunk).equals(whole)
        moved = chunk.with_columns(pl.col("place") + 300)
        assert stale_derived_traces(store, moved).equals(whole)
        assert whole.height == 50
