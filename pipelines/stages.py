"""The stages of a scoring run, as plain functions of paths and keys (the flow's task bodies)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import datetime
from importlib.metadata import version
from pathlib import Path

import polars as pl

from storage.duckdb_store import DuckDBStore, RunHandle
from storage.hashing import file_sha256, sha256_hex
from storage.readers import (
    CANONICAL_SCHEMA,
    DEFAULT_BATCH_ROWS,
    FileInfo,
    ReadResult,
    expand_paths,
    read_file_batches,
)
from tracegrade.config import Settings
from tracegrade.progress import stage_progress
from transforms.novelty import EMPTY_CACHE_NOVELTY
from transforms.replay import plan_replay, scope_key, trace_text
from transforms.validate import QUARANTINE_COLUMNS, split_duplicates, with_rule
from transforms.value import value_features, value_score

__all__ = [
    "commit_ledger",
    "limit_to_range",
    "stage_chunk",
    "start_run",
    "work_root",
    "StagedRun",
    "commit_results",
    "plan_novelty",
    "score_staged",
    "stage_inputs",
]

VALID, QUARANTINE, FILES, PLAN, NOVELTY, SCORES, TRACES, PARTS = (
    "valid.parquet",
    "quarantine.parquet",
    "files.parquet",
    "plan.parquet",
    "novelty.parquet",
    "scores.parquet",
    "traces.parquet",
    "parts",
)
_DROPPED = ["rule", "reason", "read_rule", "read_reason", "created_at_raw"]


@dataclass(frozen=True)
class StagedRun:
    """Where a run keeps its intermediate files, and its identity."""

    db: str
    run_id: str
    run_seq: int
    work_dir: str

    @property
    def handle(self) -> RunHandle:
        """The run as the store knows it."""
        return RunHandle(self.run_id, self.run_seq)

    def path(self, name: str) -> Path:
        """A file in the run's work folder."""
        return Path(self.work_dir) / name


def work_root(store: DuckDBStore) -> Path:
    """The hidden folder beside the database where runs stage their files.

    Folder inputs skip hidden entries, so staging files are never read back as exports even
    when the database sits in the export folder.
    """
    return store.path.parent / f".{store.path.name}.work"


def start_run(
    store: DuckDBStore, flow: str, settings: Settings, *, embed: bool, recover: bool = True
) -> StagedRun:
    """Open a run and log it; with `recover`, first close runs a crash left open.

    A flow that opens several runs (a backfill's chunks) recovers only before its first.
    """
    if recover:
        for run_id in store.close_interrupted_runs():
            shutil.rmtree(work_root(store) / run_id, ignore_errors=True)
    handle = store.begin_run(
        flow,
        version=version("tracegrade"),
        model=settings.embedding.model_key() if embed else None,
        config=settings.model_dump(mode="json"),
        config_hash=settings.scoring_hash(),
    )
    work_dir = work_root(store) / handle.run_id
    work_dir.mkdir(parents=True, exist_ok=True)
    return StagedRun(str(store.path), handle.run_id, handle.run_seq, str(work_dir))


class _BatchWriter:
    """Validates each batch of one file's rows and writes its valid and rejected rows."""

    def __init__(self, run: StagedRun, prefix: str) -> None:
        self.folder = run.path(PARTS)
        self.prefix = prefix
        self.count = 0

    def __call__(self, frame: pl.DataFrame) -> None:
        name = f"{self.prefix}-{self.count:06d}"
        self.count += 1
        checked = with_rule(frame.lazy()).collect()
        valid = checked.filter(pl.col("rule").is_null()).drop(_DROPPED).with_columns(trace_text())
        valid.with_columns(text_sha=sha256_hex(valid["text"])).write_parquet(
            self.folder / f"{name}-valid.parquet"
        )
        checked.filter(pl.col("rule").is_not_null()).select(QUARANTINE_COLUMNS).write_parquet(
            self.folder / f"{name}-rejected.parquet"
        )


def stage_inputs(
    store: DuckDBStore,
    run: StagedRun,
    paths: list[str],
    *,
    force: bool = False,
    batch_rows: int | None = None,
) -> dict[str, int]:
    """Read and validate the input files not loaded before; stage valid rows and quarantine.

    Files are read a batch at a time and each batch is validated and written out at once, so
    memory stays bounded whatever the input size. Duplicate ids are settled afterwards over
    the light key columns of every batch. A file whose (path, content hash) is already in the
    ledger, wholly loaded or quarantined, is skipped
    unless `force`.
    """
    files = expand_paths(paths)
    known = store.sql("SELECT path, content_hash FROM files WHERE status <> 'partial'")
    seen = set(zip(known["path"].to_list(), known["content_hash"].to_list(), strict=True))
    todo = [f for f in files if force or (str(f), file_sha256(f)) not in seen]
    run.path(PARTS).mkdir(exist_ok=True)
    infos: list[FileInfo] = []
    for index, path in enumerate(todo):
        info = read_file_batches(
            path, _BatchWriter(run, f"{index:06d}"), batch_rows or DEFAULT_BATCH_ROWS
        )
        if info.rule is not None:
            for part in run.path(PARTS).glob(f"{index:06d}-*"):
                part.unlink()
        infos.append(info)
    valid_parts = sorted(run.path(PARTS).glob("*-valid.parquet"))
    rejected_parts = sorted(run.path(PARTS).glob("*-rejected.parquet"))
    duplicates = _duplicates(valid_parts)
    rejected = pl.concat(
        [
            *(pl.read_parquet(part) for part in rejected_parts),
            duplicates,
            ReadResult(pl.DataFrame(), infos).rejected_files(),
        ]
    )
    if valid_parts:
        pl.scan_parquet(valid_parts).join(
            duplicates.lazy().select("source_file", "row_number"),
            on=["source_file", "row_number"],
            how="anti",
            maintain_order="left",
        ).sink_parquet(run.path(VALID))
    else:
        pl.DataFrame(schema=_valid_schema()).write_parquet(run.path(VALID))
    hashes = {info.path: info.content_hash for info in infos}
    quarantine = rejected.select(
        file=pl.col("source_file"),
        file_hash=pl.col("source_file").replace_strict(hashes, return_dtype=pl.String),
        row_number=pl.col("row_number"),
        trace_id=pl.col("trace_id"),
        rule=pl.col("rule"),
        reason=pl.col("reason"),
        run_id=pl.lit(run.run_id),
    )
    quarantine.write_parquet(run.path(QUARANTINE))
    shutil.rmtree(run.path(PARTS))
    valid_rows = pl.scan_parquet(run.path(VALID)).select("source_file").collect()
    _file_ledger(infos, valid_rows, rejected, run.run_id).write_parquet(run.path(FILES))
    return {
        "files_read": len(todo),
        "files_skipped": len(files) - len(todo),
        "files_quarantined": sum(info.rule is not None for info in infos),
        "rows_read": sum(info.rows_read for info in infos),
        "rows_valid": valid_rows.height,
        "rows_quarantined": quarantine.height,
    }


def _valid_schema() -> dict[str, pl.DataType]:
    schema = {k: v for k, v in CANONICAL_SCHEMA.items() if k not in _DROPPED}
    return {**schema, "text": pl.String(), "text_sha": pl.String()}


def _duplicates(valid_parts: list[Path]) -> pl.DataFrame:
    """Quarantine rows for all but the last occurrence of each id, over every staged batch."""
    if not valid_parts:
        return pl.DataFrame(schema=dict.fromkeys(QUARANTINE_COLUMNS, pl.String())).cast(
            {"row_number": pl.Int64}
        )
    keys = (
        pl.scan_parquet(valid_parts)
        .select("trace_id", "content_hash", "source_file", "row_number")
        .with_columns(rule=pl.lit(None, dtype=pl.String), reason=pl.lit(None, dtype=pl.String))
    )
    return (
        split_duplicates(keys)
        .filter(pl.col("rule").is_not_null())
        .select(QUARANTINE_COLUMNS)
        .collect()
    )


def _file_ledger(
    files: list[FileInfo], valid: pl.DataFrame, rejected: pl.DataFrame, run_id: str
) -> pl.DataFrame:
    scored = valid.group_by("source_file").len("rows_scored")
    quarantined = (
        rejected.filter(pl.col("row_number").is_not_null())
        .group_by("source_file")
        .len("rows_quarantined")
    )
    ledger = pl.DataFrame(
        [
            {
                "path": info.path,
                "content_hash": info.content_hash,
                "size": info.size,
                "status": "quarantined" if info.rule else "loaded",
                "rule": info.rule,
                "reason": info.reason,
                "rows_read": info.rows_read,
            }
            for info in files
        ],
        schema={
            "path": pl.String,
            "content_hash": pl.String,
            "size": pl.Int64,
            "status": pl.String,
            "rule": pl.String,
            "reason": pl.String,
            "rows_read": pl.Int64,
        },
    )
    return (
        ledger.join(scored, left_on="path", right_on="source_file", how="left")
        .join(quarantined, left_on="path", right_on="source_file", how="left")
        .with_columns(
            pl.col("rows_scored").fill_null(0).cast(pl.Int64),
            pl.col("rows_quarantined").fill_null(0).cast(pl.Int64),
            rows_out_of_range=pl.lit(0, dtype=pl.Int64),
            run_id=pl.lit(run_id),
        )
    )


_PLAN_INPUT = [
    "trace_id",
    "content_hash",
    "created_at",
    "agent_id",
    "task_domain",
    "success",
    "source_file",
    "text_sha",
]
_FEATURE_INPUT = [
    "trace_id",
    "content_hash",
    "created_at",
    "agent_id",
    "task_domain",
    "success",
    "confidence",
    "steps",
    "source_file",
]


def _stored_with_scope(store: DuckDBStore, settings: Settings) -> pl.DataFrame:
    return store.stored_traces().with_columns(scope_key(settings.novelty.scope))


def plan_novelty(
    store: DuckDBStore, run: StagedRun, settings: Settings, *, embed: bool
) -> dict[str, int]:
    """Sort out new, changed and unchanged traces and plan which ones to (re)score.

    Writes plan.parquet: the replay rows in order, with `fresh`, `target` and `window_start`.
    """
    valid = pl.read_parquet(run.path(VALID), columns=_PLAN_INPUT).with_columns(
        scope_key(settings.novelty.scope)
    )
    stored = _stored_with_scope(store, settings)
    status = valid.join(
        stored.select("trace_id", stored_hash="content_hash"), on="trace_id", how="left"
    ).select(
        "trace_id",
        status=pl.when(pl.col("stored_hash").is_null())
        .then(pl.lit("new"))
        .when(pl.col("stored_hash") == pl.col("content_hash"))
        .then(pl.lit("unchanged"))
        .otherwise(pl.lit("changed")),
    )
    fresh = valid.join(status.filter(pl.col("status") != "unchanged"), on="trace_id")
    if embed:
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
    else:
        rows = fresh.select("trace_id", "scope_key", "created_at", "text_sha").with_columns(
            fresh=pl.lit(True), target=pl.lit(True), window_start=pl.lit(0, dtype=pl.Int64)
        )
    rows.write_parquet(run.path(PLAN))
    counts = status["status"].value_counts()
    by_status = dict(zip(counts["status"].to_list(), counts["count"].to_list(), strict=True))
    return {
        "rows_new": by_status.get("new", 0),
        "rows_changed": by_status.get("changed", 0),
        "rows_unchanged": by_status.get("unchanged", 0),
        "rows_rescored": int((rows["target"] & ~rows["fresh"]).sum()),
        "rows_late": _late_count(fresh, stored),
    }


def _late_count(fresh: pl.DataFrame, stored: pl.DataFrame) -> int:
    """Fresh traces older than the newest trace already stored in their novelty scope."""
    newest = stored.group_by("scope_key").agg(newest=pl.col("created_at").max())
    late = fresh.join(newest, on="scope_key").filter(pl.col("created_at") < pl.col("newest"))
    return late.height


def score_staged(
    store: DuckDBStore, run: StagedRun, settings: Settings, *, embed: bool
) -> dict[str, int]:
    """Compute the value score of every target; writes scores.parquet.

    With `embed`, N comes from novelty.parquet (`pipelines.novelty_stages.replay_staged`).
    """
    plan = pl.read_parquet(run.path(PLAN))
    advance = stage_progress("scoring", int(plan["target"].sum()))
    if embed:
        if not run.path(NOVELTY).exists():
            raise RuntimeError(f"{run.path(NOVELTY)} is missing: replay novelty before scoring")
        novelty = pl.read_parquet(run.path(NOVELTY))
    else:
        novelty = plan.select(
            "trace_id",
            novelty=pl.lit(EMPTY_CACHE_NOVELTY),
            novelty_window=pl.lit(0, dtype=pl.Int32),
            novelty_source=pl.lit("no_embedder"),
        )
    fresh_ids = plan.filter("fresh").select("trace_id").lazy()
    fresh = pl.scan_parquet(run.path(VALID)).select(_FEATURE_INPUT)
    rows = fresh.join(fresh_ids, on="trace_id", how="semi")
    rescored = plan.filter(pl.col("target") & ~pl.col("fresh"))["trace_id"]
    if len(rescored):
        stored = store.traces_for(rescored, _FEATURE_INPUT).cast(fresh.collect_schema())
        rows = pl.concat([rows, stored.lazy()])
    scored = value_score(
        value_features(
            rows.with_columns(scope_key(settings.novelty.scope)), settings.scoring.all_profiles()
        ).join(novelty.lazy(), on="trace_id"),
        settings.scoring.share_threshold,
    ).with_columns(
        run_id=pl.lit(run.run_id),
        run_seq=pl.lit(run.run_seq, dtype=pl.Int64),
        config_hash=pl.lit(settings.scoring_hash()),
    )
    scored.select(store.columns("scores")).sink_parquet(run.path(SCORES))
    pl.scan_parquet(run.path(VALID)).join(fresh_ids, on="trace_id", how="semi").with_columns(
        run_id=pl.lit(run.run_id)
    ).select(store.columns("traces")).sink_parquet(run.path(TRACES))
    written = pl.scan_parquet(run.path(SCORES)).select(pl.len()).collect().item()
    advance(written)
    return {"rows_scored_now": written}


def commit_results(store: DuckDBStore, run: StagedRun) -> None:
    """Write the run's traces, scores, quarantine rows and file ledger in one transaction."""
    names = (("traces", TRACES), ("scores", SCORES), ("quarantine", QUARANTINE), ("files", FILES))
    store.commit_run(
        run.handle, {name: run.path(file) for name, file in names if run.path(file).exists()}
    )


def limit_to_range(archive: StagedRun, low: datetime, high: datetime) -> dict[str, int]:
    """Keep the staged traces whose created_at lies in [low, high); count the others per file.

    A file with rows left out is recorded in the ledger as `partial`, so a later run reads it
    again (its stored traces are then recognised as unchanged).
    """
    staged = pl.scan_parquet(archive.path(VALID))
    inside = pl.col("created_at").is_between(low, high, closed="left")
    outside = staged.filter(~inside).group_by("source_file").len("rows_out_of_range").collect()
    staged.filter(inside).sink_parquet(archive.path("in_range.parquet"))
    archive.path("in_range.parquet").replace(archive.path(VALID))
    ledger = (
        pl.read_parquet(archive.path(FILES))
        .drop("rows_out_of_range")
        .join(outside, left_on="path", right_on="source_file", how="left")
        .with_columns(pl.col("rows_out_of_range").fill_null(0).cast(pl.Int64))
        .with_columns(
            rows_scored=pl.col("rows_scored") - pl.col("rows_out_of_range"),
            status=pl.when(pl.col("rows_out_of_range") > 0)
            .then(pl.lit("partial"))
            .otherwise(pl.col("status")),
        )
    )
    ledger.write_parquet(archive.path(FILES))
    left_out = int(outside["rows_out_of_range"].sum())
    return {"rows_out_of_range": left_out, "rows_valid": -left_out}


def stage_chunk(archive: StagedRun, chunk: StagedRun, low: datetime, high: datetime) -> None:
    """Stage the archive's traces with created_at in [low, high) as the chunk run's input."""
    pl.scan_parquet(archive.path(VALID)).filter(
        pl.col("created_at").is_between(low, high, closed="left")
    ).sink_parquet(chunk.path(VALID))


def commit_ledger(store: DuckDBStore, archive: StagedRun) -> None:
    """Write the archive's quarantine rows and file ledger, once every chunk is committed."""
    store.commit_run(
        archive.handle,
        {"quarantine": archive.path(QUARANTINE), "files": archive.path(FILES)},
    )
