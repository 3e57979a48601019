"""The scoring stages after staging: plan the novelty replay, compute the value scores, commit
the run (plain functions of the store, the run and its settings)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl

from pipelines.progress import stage_progress
from pipelines.runs import Run
from pipelines.staging import FILES, NOVELTY, PLAN, QUARANTINE, SCORES, open_span_tables
from storage.store.duckdb_store import DuckDBStore
from storage.store.staging_store import (
    LIGHT_STEP_FIELDS,
    plan_staged,
    staged_chunks,
    staged_rows,
    staged_table,
)
from transforms.config.scoring import ScoringFile
from transforms.novelty import EMPTY_CACHE_NOVELTY
from transforms.replay import plan_replay, scope_key, scope_key_sql
from transforms.value import value_features, value_score

__all__ = ["commit_inputs", "commit_results", "plan_novelty", "score_staged"]

SCORE_CHUNK_TRACES = 25_000
"""Targets scored at a time: each chunk's rows are read, scored and written to a part file,
so memory stays bounded whatever the run's size."""

FRESH = "fresh.parquet"
"""The ids of the run's new and changed traces with their `_order`, in staging order: the
staged rows the score stage reads and the commit stores."""

PLANNED_AT = "planned_at"
"""The database's count of scoring commits when the run planned (the commit checks it)."""


_TRACE_KEYS = ["trace_id", "content_hash", "created_at", "agent_id", "task_domain", "success"]
"""A staged trace's identity and the columns every stage groups or filters by."""
_PLAN_INPUT = [*_TRACE_KEYS, "text_sha", "_order"]
_FEATURE_INPUT = [*_TRACE_KEYS, "confidence", "steps", "source_file"]


def _fresh_rows(
    store: DuckDBStore, run: Run, settings: ScoringFile
) -> tuple[pl.DataFrame, pl.Series, pl.DataFrame, pl.DataFrame]:
    """The run's new and changed rows (with their scope key and `_order`), every staged row's
    status (new, changed or unchanged), every stored trace (the replay reads their caches),
    and the newest stored created_at of each scope. The staged rows are held once: the fresh
    ones are filtered out of the frame that carries the status."""
    # The plan orders the rows itself (plan_replay by scope and time; the scores by staging
    # order when they read their chunks), so DuckDB need not sort them.
    valid = staged_rows(store, run.run_id, _PLAN_INPUT, ordered=False).with_columns(
        scope_key(settings.novelty.scope)
    )
    stored = store.stored_traces().with_columns(scope_key(settings.novelty.scope))
    newest = stored.group_by("scope_key").agg(newest=pl.col("created_at").max())
    stored_hash = pl.col("trace_id").replace_strict(
        stored["trace_id"], stored["content_hash"], default=None, return_dtype=pl.String
    )
    valid = valid.with_columns(stored_hash=stored_hash).with_columns(
        status=pl.when(pl.col("stored_hash").is_null())
        .then(pl.lit("new"))
        .when(pl.col("stored_hash") == pl.col("content_hash"))
        .then(pl.lit("unchanged"))
        .otherwise(pl.lit("changed"))
    )
    status = valid["status"]
    unchanged = status == "unchanged"
    fresh = valid.filter(~unchanged) if unchanged.any() else valid
    return fresh.drop("stored_hash", "status"), status, stored, newest


def plan_novelty(
    store: DuckDBStore, run: Run, settings: ScoringFile, *, embed: bool
) -> dict[str, int]:
    """Sort out new, changed and unchanged traces and plan which ones to (re)score.

    Writes plan.parquet (the replay rows in order, with `fresh`, `target` and `window_start`)
    and fresh.parquet (the new and changed traces' trace_id and _order, in staging order).
    Without the embedder every fresh trace is a target and nothing else is: DuckDB writes
    both files, so the run holds none of its ids (`plan_staged`).
    """
    run.path(PLANNED_AT).write_text(str(store.commits()))
    if not embed:
        scope = scope_key_sql(settings.novelty.scope)
        planned = plan_staged(store, run.run_id, scope, run.path(PLAN), run.path(FRESH))
        return {**planned, "rows_rescored": 0}
    fresh, status, stored, newest = _fresh_rows(store, run, settings)
    fresh.select("trace_id", "_order").sort("_order").write_parquet(run.path(FRESH))
    novelty = settings.novelty
    plan = plan_replay(
        stored,
        fresh,
        max_elements=novelty.max_elements,
        ttl_us=None if novelty.ttl_seconds is None else round(novelty.ttl_seconds * 1_000_000),
    )
    rows = plan.rows.with_columns(
        target=pl.Series(plan.targets), window_start=pl.Series(plan.window_start)
    )
    rows.write_parquet(run.path(PLAN))
    counts = status.value_counts()
    by_status = dict(zip(counts["status"].to_list(), counts["count"].to_list(), strict=True))
    newest_there = pl.col("scope_key").replace_strict(
        newest["scope_key"], newest["newest"], default=None, return_dtype=newest["newest"].dtype
    )
    late = fresh.select((pl.col("created_at") < newest_there).sum()).item()
    return {
        "rows_new": by_status.get("new", 0),
        "rows_changed": by_status.get("changed", 0),
        "rows_unchanged": by_status.get("unchanged", 0),
        "rows_rescored": int((rows["target"] & ~rows["fresh"]).sum()),
        "rows_late": late,
    }


def score_staged(
    store: DuckDBStore, run: Run, settings: ScoringFile, *, embed: bool
) -> dict[str, int]:
    """Compute the value score of every target; writes scores.parquet.

    With `embed`, N comes from novelty.parquet (`pipelines.novelty_stages.replay_staged`).
    """
    targets = pl.scan_parquet(run.path(PLAN)).select(pl.col("target").sum()).collect().item()
    advance = stage_progress("scoring", int(targets))
    novelty: pl.DataFrame | None = None
    if embed:
        if not run.path(NOVELTY).exists():
            raise RuntimeError(f"{run.path(NOVELTY)} is missing: replay novelty before scoring")
        novelty = pl.read_parquet(run.path(NOVELTY))
    parts, columns = [], store.columns("scores")
    for part, rows in enumerate(_chunk_rows(store, run)):
        path = run.path(f"scores-{part:05d}.parquet")
        store.release()  # scoring reads the run's own tables (stored ones only to re-score)
        _score_chunk(rows, run, settings, novelty).select(columns).sink_parquet(path)
        parts.append(path)
    pl.scan_parquet(parts).sink_parquet(run.path(SCORES))
    for path in parts:
        path.unlink()
    written = pl.scan_parquet(run.path(SCORES)).select(pl.len()).collect().item()
    advance(written)
    return {"rows_scored_now": written}


def _chunk_rows(store: DuckDBStore, run: Run) -> Iterator[pl.LazyFrame]:
    """The feature input of every trace the plan scores, SCORE_CHUNK_TRACES at a time: fresh
    ones from the run's staging table in staging order (each chunk reads one stretch of it,
    the ids fresh.parquet lists), then the re-scored ones from the stored traces."""
    light = LIGHT_STEP_FIELDS
    none = pl.Series("trace_id", [], dtype=pl.String)
    schema = staged_rows(store, run.run_id, _FEATURE_INPUT, ids=none, step_fields=light).schema
    chunks = staged_chunks(
        store, run.run_id, run.path(FRESH), _FEATURE_INPUT, SCORE_CHUNK_TRACES, step_fields=light
    )
    fresh = 0
    for rows in chunks:
        fresh += rows.height
        yield rows.lazy()
    rescored = (
        pl.scan_parquet(run.path(PLAN))
        .filter(pl.col("target") & ~pl.col("fresh"))
        .select("trace_id")
        .collect(engine="streaming")
    )
    for chunk in rescored.iter_slices(SCORE_CHUNK_TRACES):
        stored = store.traces_for(chunk["trace_id"], _FEATURE_INPUT, step_fields=light)
        yield stored.cast(schema).lazy()
    if not fresh and rescored.is_empty():
        yield pl.LazyFrame(schema=schema)  # an empty scores file still has every column


def _score_chunk(
    rows: pl.LazyFrame, run: Run, settings: ScoringFile, novelty: pl.DataFrame | None
) -> pl.LazyFrame:
    """The scores of one chunk of feature input rows (fresh or re-scored traces); `novelty`
    is the replay's (none without the embedder: every trace then gets the empty cache's N)."""
    features = value_features(
        rows.with_columns(scope_key(settings.novelty.scope)), settings.scoring.all_profiles()
    )
    if novelty is None:
        features = features.with_columns(
            novelty=pl.lit(EMPTY_CACHE_NOVELTY),
            novelty_window=pl.lit(0, dtype=pl.Int32),
            novelty_source=pl.lit("no_embedder"),
        )
    else:
        features = features.join(novelty.lazy(), on="trace_id")
    return value_score(
        features,
        settings.scoring.share_threshold,
    ).with_columns(
        run_id=pl.lit(run.run_id),
        run_seq=pl.lit(run.run_seq, dtype=pl.Int64),
        config_hash=pl.lit(settings.config_hash),
    )


def commit_inputs(run: Run) -> tuple[dict[str, Path], tuple[str, Path] | None, int | None]:
    """What the run commits: its scores, quarantine and file ledger files, the spans it keeps
    for later runs (storage/spans/open_spans.py), its staging table
    with the file of the trace ids to store from it (new and changed), and the commit count
    it planned against."""
    names = (("scores", SCORES), ("quarantine", QUARANTINE), ("files", FILES))
    traces = None
    if run.path(FRESH).exists():
        traces = (staged_table(run.run_id), run.path(FRESH))
    planned = run.path(PLANNED_AT)
    return (
        {name: run.path(file) for name, file in names if run.path(file).exists()}
        | open_span_tables(run),
        traces,
        int(planned.read_text()) if planned.exists() else None,
    )


def commit_results(store: DuckDBStore, run: Run, batch_rows: int | None) -> None:
    """Write the run's traces (the new and changed staged ones) and scores in batches of
    `batch_rows` (None: the store's default), then publish them with its quarantine rows and file ledger in one last
    transaction; StalePlanError (nothing kept) when another run stored traces after this one
    planned."""
    tables, traces, planned_at = commit_inputs(run)
    store.commit_run(
        run.handle, tables, traces=traces, planned_at=planned_at, batch_rows=batch_rows
    )
