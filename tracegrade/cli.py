"""The `tracegrade` command: score exports, run the demo, query the store."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path

from tracegrade.chat_cli import add_import_command
from tracegrade.errors import ConfigError, InputError, StoreLockedError, TracegradeError

__all__ = ["main"]

EXIT_OK, EXIT_NOTHING_SCORED, EXIT_USAGE, EXIT_LOCKED, EXIT_FAILED = 0, 1, 2, 3, 4

DEMO_QUERIES = (
    (
        "Score quantiles and shareable rate per domain",
        "SELECT task_domain, count(*) AS traces, round(median(score), 3) AS median_score,\n"
        "       round(quantile_cont(score, 0.9), 3) AS p90, round(avg(shareable::INT), 3) AS shareable_rate\n"
        "FROM latest_scores GROUP BY task_domain ORDER BY traces DESC;",
    ),
    (
        "The ten most novel shareable traces",
        "SELECT trace_id, agent_id, task_domain, round(novelty, 3) AS novelty, round(score, 3) AS score\n"
        "FROM latest_scores WHERE shareable ORDER BY novelty DESC, trace_id LIMIT 10;",
    ),
    (
        "Why rows were quarantined",
        "SELECT rule, count(*) AS rows, any_value(reason) AS example\n"
        "FROM quarantine GROUP BY rule ORDER BY rows DESC;",
    ),
)


class _RichProgress:
    """Progress bars for long stages, drawn on stderr."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("{task.description:>10}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )

    def __enter__(self) -> _RichProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def start(self, stage: str, total: int) -> Callable[[int], None]:
        task_id = self._progress.add_task(stage, total=total)
        return lambda done: self._progress.advance(task_id, done)


def _quiet_prefect() -> None:
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")


def _check_writable(db: str) -> None:
    """Fail fast, before Prefect starts, when another process holds the database."""
    from storage.duckdb_store import DuckDBStore

    DuckDBStore(db).close()


def _run_scoring(
    paths: Sequence[str],
    db: str,
    config: str | None,
    no_embedder: bool,
    force: bool,
    judge_config: str | None = None,
    confidence_config: str | None = None,
) -> int:
    from pipelines.score import score_traces
    from tracegrade.config import load_settings
    from tracegrade.progress import progress_sink

    load_settings(config)
    _check_writable(db)
    with _RichProgress() as bars, progress_sink(bars):
        summary = score_traces(
            list(paths),
            db=db,
            config=config,
            no_embedder=no_embedder,
            force=force,
            judge_config=judge_config,
            confidence_config=confidence_config,
        )
    print(summary.markdown)
    if summary.nothing_scored:
        print(
            "tracegrade: nothing could be scored: every row or file was quarantined",
            file=sys.stderr,
        )
        return EXIT_NOTHING_SCORED
    return EXIT_OK


def _cmd_score(args: argparse.Namespace) -> int:
    return _run_scoring(
        args.paths,
        args.db,
        args.config,
        args.no_embedder,
        args.force,
        args.judge_config,
        args.confidence_config,
    )


def _cmd_backfill(args: argparse.Namespace) -> int:
    from pipelines.backfill import backfill
    from tracegrade.config import load_settings
    from tracegrade.progress import progress_sink

    load_settings(args.config)
    _check_writable(args.db)
    with _RichProgress() as bars, progress_sink(bars):
        summary = backfill(
            list(args.paths),
            start=args.start,
            end=args.end,
            db=args.db,
            config=args.config,
            no_embedder=args.no_embedder,
            chunk_days=args.chunk_days,
        )
    print(summary.markdown)
    return EXIT_NOTHING_SCORED if summary.nothing_scored else EXIT_OK


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date; use YYYY-MM-DD") from None


def _cmd_demo(args: argparse.Namespace) -> int:
    from tracegrade.demo_archive import write_demo_archive

    folder = Path(args.dir)
    archive = folder / "archive"
    files = write_demo_archive(archive)
    db = folder / "demo.duckdb"
    print(f"Wrote a synthetic archive of {len(files)} daily exports to {archive}\n")
    status = _run_scoring(
        [str(archive)],
        str(db),
        args.config,
        args.no_embedder,
        args.force,
        args.judge_config,
        args.confidence_config,
    )
    print(f'Query the scores with SQL, for example: tracegrade sql --db {db} "<query>"\n')
    for title, query in DEMO_QUERIES:
        print(f"-- {title}\n{query}\n")
    return status


def _cmd_sql(args: argparse.Namespace) -> int:
    from storage.duckdb_store import DuckDBStore

    if not Path(args.db).exists():
        raise InputError(
            f"database {args.db} does not exist; check the path, or create it with "
            f"tracegrade score PATH --db {args.db}"
        )
    with DuckDBStore(args.db, read_only=True) as store:
        frame = store.sql(args.query)
    import polars as pl

    with pl.Config(tbl_rows=args.rows, tbl_cols=-1, fmt_str_lengths=60, tbl_width_chars=200):
        print(frame)
    return EXIT_OK


EXIT_CASES_FAILED = 5
"""`operations --check`: the run completed and at least one case failed its scorer set."""


def _cmd_operations(args: argparse.Namespace) -> int:
    from pipelines.operations import score_operations
    from tracegrade.operations_config import load_scorer_set

    load_scorer_set(args.scorers, args.set)
    report = score_operations(
        list(args.paths), db=args.db, scorers=args.scorers, scorer_set=args.set, force=args.force
    )
    print(report.markdown)
    if report.nothing_scored:
        print("tracegrade: the input holds no eval case", file=sys.stderr)
        return EXIT_NOTHING_SCORED
    if args.check and report.failed:
        print(f"tracegrade: {report.failed} of {report.cases} cases failed", file=sys.stderr)
        return EXIT_CASES_FAILED
    return EXIT_OK


def _cmd_confidence(args: argparse.Namespace) -> int:
    from pipelines.confidence import confidence_traces
    from tracegrade.confidence_config import load_confidence_config

    load_confidence_config(args.config)
    _check_writable(args.db)
    report = confidence_traces(
        db=args.db,
        factors=list(args.factors) or None,
        config=args.config,
        no_embedder=args.no_embedder,
        force=args.force,
    )
    print(report.markdown)
    if report.nothing_scored:
        print("tracegrade: every factor row was quarantined", file=sys.stderr)
        return EXIT_NOTHING_SCORED
    return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tracegrade", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    score = commands.add_parser(
        "score", help="score trace exports (files, folders, globs) into DuckDB"
    )
    score.add_argument("paths", nargs="+", metavar="PATH")
    score.add_argument(
        "--db", required=True, metavar="FILE", help="the DuckDB file (created when missing)"
    )
    score.add_argument("--config", metavar="FILE", help="a TOML configuration file")
    score.add_argument(
        "--no-embedder", action="store_true", help="score with N = 0.5 (no embedding model)"
    )
    score.add_argument(
        "--force", action="store_true", help="read files already in the ledger again"
    )
    score.set_defaults(handler=_cmd_score)

    backfill = commands.add_parser(
        "backfill", help="score an archive in chronological chunks of event time (resumable)"
    )
    backfill.add_argument("paths", nargs="+", metavar="PATH")
    backfill.add_argument("--start", required=True, type=_day, help="first UTC day (YYYY-MM-DD)")
    backfill.add_argument("--end", required=True, type=_day, help="last UTC day, inclusive")
    backfill.add_argument("--db", required=True, metavar="FILE")
    backfill.add_argument("--config", metavar="FILE")
    backfill.add_argument("--no-embedder", action="store_true")
    backfill.add_argument("--chunk-days", type=int, default=1, help="days of event time per chunk")
    backfill.set_defaults(handler=_cmd_backfill)

    demo = commands.add_parser(
        "demo", help="generate a synthetic archive, score it, show example SQL"
    )
    demo.add_argument("--dir", default="tracegrade-demo", help="where the archive and database go")
    demo.add_argument("--config", metavar="FILE")
    demo.add_argument("--no-embedder", action="store_true")
    demo.add_argument("--force", action="store_true")
    for command in (score, demo):
        command.add_argument(
            "--judge-config",
            metavar="FILE",
            help="judge the answers after scoring with this evaluator.toml (LLM calls, costs "
            "money); without it the summary says the judge was skipped",
        )
        command.add_argument(
            "--confidence-config",
            metavar="FILE",
            help="a confidence TOML file for the derived intervention levels (default settings "
            "without it)",
        )
    demo.set_defaults(handler=_cmd_demo)

    sql = commands.add_parser("sql", help="run a read-only SQL query against a tracegrade database")
    sql.add_argument("query")
    sql.add_argument("--db", required=True, metavar="FILE")
    sql.add_argument("--rows", type=int, default=40, help="rows to print")
    sql.set_defaults(handler=_cmd_sql)

    operations = commands.add_parser(
        "operations", help="score block-edit eval cases (JSONL, Parquet) with a scorer set"
    )
    operations.add_argument("paths", nargs="+", metavar="PATH")
    operations.add_argument(
        "--db", required=True, metavar="FILE", help="the DuckDB file (created when missing)"
    )
    operations.add_argument("--scorers", metavar="FILE", help="a TOML file of scorer sets")
    operations.add_argument(
        "--set",
        metavar="NAME",
        help="the scorer set (standard, strict, operation-focused, all, "
        "or one from --scorers; default: the file's default_set, else standard)",
    )
    operations.add_argument(
        "--force", action="store_true", help="score again cases already scored with this set"
    )
    operations.add_argument(
        "--check", action="store_true", help=f"exit {EXIT_CASES_FAILED} when any case fails"
    )
    operations.set_defaults(handler=_cmd_operations)

    add_import_command(commands)

    confidence = commands.add_parser(
        "confidence",
        help="give traces a confidence and intervention level (derived from the stored traces, "
        "or from a factors table)",
    )
    confidence.add_argument("--db", required=True, metavar="FILE", help="the DuckDB file")
    confidence.add_argument(
        "--factors",
        nargs="*",
        default=[],
        metavar="PATH",
        help="factors files or folders (Parquet, JSONL); without: derived mode",
    )
    confidence.add_argument("--config", metavar="FILE", help="a confidence TOML file")
    confidence.add_argument(
        "--no-embedder", action="store_true", help="do not compute source agreement"
    )
    confidence.add_argument(
        "--force", action="store_true", help="score again traces whose input is unchanged"
    )
    confidence.set_defaults(handler=_cmd_confidence)

    from tracegrade.judge.command import add_judge_command

    add_judge_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    _quiet_prefect()
    try:
        return int(args.handler(args))
    except (ConfigError, InputError) as exc:
        print(f"tracegrade: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except StoreLockedError as exc:
        print(f"tracegrade: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    except TracegradeError as exc:
        print(f"tracegrade: {exc}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
