"""The `score_traces` flow: trace exports in, one scored row per trace in DuckDB out.

read and validate -> plan novelty -> embed new texts -> replay -> score -> commit
-> (Parquet copy) -> derived confidence -> summary -> judge (when configured)

This module decides whether there is anything to do; the steps themselves are
`pipelines.scoring_steps`, imported only when there is. A rerun whose files the ledger
already holds unchanged, with every stored level current, ends here without loading them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.runs import publish_markdown, run_logger, work_root
from storage.confidence.store import derived_levels_current
from storage.config_files import load_confidence_config, load_settings
from storage.errors import NoInputFilesError
from storage.inputs import formats
from storage.inputs.input_paths import input_files
from storage.names import path_text
from storage.store.ledger import in_ledger, open_runs, stored_files
from storage.store.locations import locate
from storage.store.registry import held_store
from storage.store.store_health import check_store
from transforms.config.defaults import DEFAULT_CONFIDENCE_HASH
from transforms.summary import RunSummary

if TYPE_CHECKING:
    from storage.inputs.readers import FileFormat
    from transforms.config.scoring import ScoringFile

__all__ = ["score_traces"]


def _delivered(
    paths: list[str], file_format: FileFormat | None, empty_ok: bool
) -> tuple[list[str], list[Path]]:
    """The paths a run reads and the files they name. A path that names nothing stops the run
    here; with `empty_ok`, a folder or glob pattern that holds no input file yet is left out
    instead, and a run left with none is nothing to do (no run recorded; a path that does not
    exist is still an error)."""
    if not empty_ok:
        return paths, input_files(paths, file_format)
    kept, files = [], set()
    for path in paths:
        try:
            files.update(input_files([path], file_format))
        except NoInputFilesError:
            continue
        kept.append(path)
    return kept, sorted(files, key=str)


def _nothing_to_do(markdown: str, counts: dict[str, int]) -> RunSummary:
    """The summary of a flow run that found nothing to do: no run recorded, a note that says
    why (a completed flow run, not a failed one)."""
    run_logger().info(markdown.strip())
    publish_markdown(markdown, "score-traces-summary", "tracegrade run summary: nothing to do")
    return RunSummary("", "completed", counts, {}, None, None, markdown)


def _nothing_delivered(paths: list[str]) -> RunSummary:
    """A scheduled run whose export folders hold no file yet."""
    return _nothing_to_do(
        "# tracegrade: nothing to do\n\nNo trace file has been delivered yet to "
        + ", ".join(f"`{path}`" for path in paths)
        + " (the folders exist and hold no input file); nothing was read or written.\n",
        {"files_read": 0},
    )


def _all_stored(db: str, files: list[Path], confidence_hash: str) -> bool:
    """True when a run over `files` would change nothing: the ledger holds each file with its
    content, every stored trace has its derived level from the confidence configuration of
    `confidence_hash`, and no run is open
    or left work behind (a crash's leftovers are a run's to clear). The files are hashed
    last, when every other answer says there is nothing to do: a night that delivered a new
    file, or a run that has levels to compute, hashes none here."""
    if not locate(db).exists():
        return False
    with held_store(db) as store:
        check_store(store)  # a data file gone: said before anything is read or skipped
        stored = stored_files(store)
        if not {path_text(file) for file in files} <= {path for path, _ in stored}:
            return False
        leftovers = work_root(store)
        if open_runs(store) or (leftovers.is_dir() and any(leftovers.iterdir())):
            return False
        if not derived_levels_current(store, confidence_hash):
            return False
        return all(in_ledger(file, stored) for file in files)


def _nothing_new(files: list[Path]) -> RunSummary:
    """A rerun over files that earlier runs stored as they are now."""
    return _nothing_to_do(
        f"# tracegrade: nothing new\n\nEvery one of the {len(files):,} input files is in the "
        "file ledger with the same content (an earlier run loaded or quarantined it), and "
        "every stored trace has its derived confidence level: no run was recorded and the "
        "database was not changed. `--force` reads the files again.\n",
        {"files_read": 0, "files_skipped": len(files), "rows_read": 0, "rows_scored": 0},
    )


def score_traces(
    paths: list[str],
    db: str = "tracegrade.duckdb",
    config: str | None = None,
    no_embedder: bool = False,
    force: bool = False,
    confidence_config: str | None = None,
    judge_config: str | None = None,
    input_format: str = "auto",
    format_config: str | None = None,
    empty_ok: bool = False,
    chat_config: str | None = None,
) -> RunSummary:
    """Score trace exports (files, folders or globs) into the DuckDB file `db`.

    Args:
        paths: trace exports in the formats of docs/formats.md.
        db: the DuckDB file; created when missing.
        config: a TOML configuration file; None uses the defaults.
        no_embedder: score without embeddings (N = 0.5 for every trace).
        force: read files again even when the ledger has them with the same content.
        confidence_config: a confidence TOML file (docs/confidence.md); None: the defaults.
        judge_config: an evaluator.toml: the stored traces are judged after scoring (else
            the summary says why the judge was skipped).
        input_format: "auto" (each file's format from its content) or a format of
            `storage.inputs.formats.FORMATS` ("traces", "otel", "chat"; docs/formats.md).
        format_config, chat_config: TOML files of the OTel and chat mapping keys.
        empty_ok: a folder or glob with no file yet is left out (a night may deliver none).
    """
    # the files given are validated first; the defaults are built only for a run (a rerun
    # with nothing to do needs only their hash, and so loads no pydantic)
    settings = load_settings(config) if config else None
    confidence = load_confidence_config(confidence_config) if confidence_config else None
    file_format = formats.file_format(input_format, format_config, chat_config)
    delivered, files = _delivered(paths, file_format, empty_ok)
    if not delivered:
        return _nothing_delivered(paths)
    levels_hash = confidence.config_hash if confidence else DEFAULT_CONFIDENCE_HASH
    if not force and judge_config is None and _all_stored(db, files, levels_hash):
        return _nothing_new(files)
    from pipelines.scoring_steps import score_files

    settings = settings or load_settings(None)
    confidence = confidence or load_confidence_config(None)

    summary = score_files(
        delivered,
        db,
        settings,
        confidence,
        file_format=file_format,
        embed=settings.embedding.enabled and not no_embedder,
        force=force,
        config=config,
    )
    summary.markdown += "\n" + _judged(db, judge_config) + _compared(db, settings, summary)
    return summary


def _compared(db: str, settings: ScoringFile, summary: RunSummary) -> str:
    """With a gate in the configuration, the run against the one before it (docs/compare.md)."""
    if not settings.compare.fail_on or summary.status != "completed":
        return ""
    from pipelines.compare import check_previous_run

    return check_previous_run(db, summary.run_id, settings.compare)


def _judged(db: str, judge_config: str | None) -> str:
    """The night's judge step, its report; imported once the run has ended (a run that judges
    nothing need not load the judge's machinery to start)."""
    from pipelines.judge.flow import judge_after_scoring

    return judge_after_scoring(db, judge_config).markdown
