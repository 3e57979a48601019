"""`tracegrade score`, `backfill`, `demo` and `sql`: trace exports in, scores in DuckDB out."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

from tracegrade.cli.exits import EXIT_NOTHING_SCORED, EXIT_OK
from tracegrade.cli.shared import add_prefect_flag, check_database, progress_bars

__all__ = ["add_scoring_commands"]

_FORMATS = (
    "auto",
    "traces",
    "otel",
    "langfuse",
    "toolbench",
    "swe-agent",
    "mini-swe-agent",
    "agentbench",
    "atif",
    "adk",
    "letta",
    "cline",
    "autogen",
    "smolagents",
    "copilot-chat",
    "continue",
    "openhands-completions",
    "openhands",
    "inspect",
    "tau2",
    "deepeval",
    "qwen-code",
    "claude-code",
    "codex",
    "windsurf",
    "cursor",
    "gemini-cli",
    "pydantic-ai",
    "chat",
)
"""`--format`: auto and the names of storage.inputs.formats.FORMATS (a test holds them equal)."""


def _format_options(args: argparse.Namespace) -> dict[str, Any]:
    """`input_format` and the mapping files of `score_traces`, as given."""
    return {
        "input_format": getattr(args, "format", "auto"),
        "format_config": getattr(args, "otel_config", None),
        "chat_config": getattr(args, "chat_config", None),
    }


def _run_scoring(args: argparse.Namespace, paths: Sequence[str], db: str) -> int:
    from storage.config_files import (
        load_chat_config,
        load_confidence_config,
        load_otel_config,
        load_settings,
    )
    from tracegrade.cli.execution import flow, flow_mode
    from transforms.config.defaults import DEFAULT_ENGINE

    # the files given are checked before anything runs; with none, the defaults need no model
    engine = load_settings(args.config).execution.engine if args.config else DEFAULT_ENGINE
    if args.confidence_config:
        load_confidence_config(args.confidence_config)
    formats = _format_options(args)
    if formats["format_config"]:
        load_otel_config(formats["format_config"])
    if formats["chat_config"]:
        load_chat_config(formats["chat_config"])
    check_database(db, data_path=getattr(args, "data_path", None))
    with flow_mode(args.prefect or engine == "dask") as prefect:
        score_traces = flow("score_traces", prefect)
        with progress_bars():
            summary = score_traces(
                list(paths),
                db=db,
                config=args.config,
                no_embedder=args.no_embedder,
                force=args.force,
                judge_config=args.judge_config,
                confidence_config=args.confidence_config,
                **formats,
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
    return _run_scoring(args, args.paths, args.db)


def _cmd_backfill(args: argparse.Namespace) -> int:
    from pipelines.backfill import chunk_bounds
    from storage.config_files import load_settings
    from tracegrade.cli.execution import flow, flow_mode

    chunk_bounds(args.start, args.end, args.chunk_days)
    settings = load_settings(args.config)
    check_database(args.db, data_path=args.data_path)
    with flow_mode(args.prefect or settings.execution.engine == "dask") as prefect:
        backfill = flow("backfill", prefect)
        with progress_bars():
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
    from pipelines.report import report_path, write_report
    from tracegrade.cli.compare import print_demo_verdict
    from tracegrade.demo import DEMO_QUERIES, write_demo_archive

    folder = Path(args.dir)
    archive = folder / "archive"
    files = write_demo_archive(archive)
    db = folder / "demo.duckdb"
    print(f"Wrote a synthetic archive of {len(files)} daily exports to {archive}\n")
    status = _run_scoring(args, [str(archive)], str(db))
    print(f'Query the scores with SQL, for example: tracegrade sql --db {db} "<query>"\n')
    for title, query in DEMO_QUERIES:
        print(f"-- {title}\n{query}\n")
    comparison = print_demo_verdict(str(db))
    out = report_path(db)
    write_report(db, out, comparison=comparison)
    print(f"The report (charts and tables, opens offline): {out}")
    print(f"Again: tracegrade report --db {db} --out report.html {comparison.flags()}")
    return status


_SCHEMA_WORDS = ("Table with name", "Referenced column", "does not exist", "not found in FROM")


def _query_failed(error: Exception) -> str:
    """DuckDB's whole message (its hints, its LINE 1 caret), and where the tables are
    described when the error is about a table or column; a write says the file is read-only."""
    text = str(error).strip() or type(error).__name__
    if "read-only" in text:
        return (
            f"the query failed: {text}\n(tracegrade sql opens the database read-only; runs "
            "write its tables)"
        )
    if any(word in text for word in _SCHEMA_WORDS):
        return f"the query failed: {text}\n(the tables and their columns: docs/storage.md)"
    return f"the query failed: {text}"


def _mode(args: argparse.Namespace) -> str:
    """--csv, --json, --mode; else a box on a terminal and CSV into a file or a pipe."""
    if args.csv:
        return "csv"
    if args.json:
        return "json"
    if args.mode is not None:
        return str(args.mode)
    return "box" if sys.stdout.isatty() else "csv"


def _cmd_sql(args: argparse.Namespace) -> int:
    import itertools
    import shutil

    import duckdb

    from storage.errors import InputError
    from storage.store.duckdb_store import DuckDBStore
    from storage.store.faults import describe_fault
    from storage.store.store_health import check_store
    from tracegrade.cli.tables import HUMAN_MODES, render, write_machine

    check_database(args.db, must_exist=True)
    mode = _mode(args)
    with DuckDBStore(args.db, read_only=True) as store:
        check_store(store)  # a missing data file: one line, before any number
        if args.as_of_run is not None:
            store.show_as_of_run(args.as_of_run)
        try:
            columns, types, cursor = store.cursor_rows(args.query)
            if mode not in HUMAN_MODES:
                batches = iter(lambda: cursor.fetchmany(10_000), [])
                rows = itertools.chain.from_iterable(batches)  # every row unless --rows
                write_machine(mode, columns, itertools.islice(rows, args.rows), sys.stdout)
                return EXIT_OK
            limit = args.rows or _HUMAN_ROWS
            shown = cursor.fetchmany(limit + 1)
        except duckdb.Error as exc:
            if describe_fault(exc, args.db, files=False) is not None:
                raise  # the disk or the catalog failed under the query: exit 4
            raise InputError(_query_failed(exc)) from None
    more = len(shown) > limit
    width = shutil.get_terminal_size((120, 24)).columns
    text, note = render(
        mode, columns, types, shown[:limit], width=width, none=args.null, fit=args.mode is None
    )
    print(text)
    if more:
        print(f"(the first {limit:,} rows; --rows N for more, --mode csv for all)")
    if note:
        print(f"({note})")
    return EXIT_OK


_HUMAN_ROWS = 40
"""Rows a box or line listing shows unless --rows says otherwise."""


def _add_score(commands: Any) -> argparse.ArgumentParser:
    score = commands.add_parser(
        "score", help="score trace exports (files, folders, globs) into DuckDB"
    )
    score.add_argument("paths", nargs="+", metavar="PATH", help=_PATHS_HELP)
    _add_database(score)
    _add_data_path(score)
    _add_scoring_options(score, force=True)
    score.add_argument(
        "--format",
        choices=_FORMATS,
        default="auto",
        help="auto (default): each file's format recognised from its content; traces: "
        "ReasoningTrace exports; otel: OpenTelemetry span files (OTLP JSON or protobuf, span "
        "lists, Phoenix span tables); langfuse: Langfuse traces with their observations; "
        "toolbench: ToolBench answer files; swe-agent: SWE-agent trajectories (.traj); "
        "mini-swe-agent: mini-swe-agent trajectories (.traj.json); "
        "cline: Cline, Roo Code and Kilo Code task histories (api_conversation_history.json); "
        "autogen: AutoGen runs (AgentChat messages, a team's saved state); "
        "smolagents: smolagents benchmark runs; copilot-chat: VS Code Copilot Chat sessions; "
        "continue: Continue sessions; windsurf: Windsurf Cascade transcripts; "
        "cursor: Cursor agent transcripts; "
        "openhands-completions: OpenHands completion logs; "
        "openhands: OpenHands trajectories; inspect: Inspect AI eval logs (.eval, .json); "
        "tau2: tau2-bench results files; claude-code: Claude Code session transcripts; "
        "codex: Codex session rollouts; "
        "chat: chat-message trajectories (docs/formats.md)",
    )
    score.add_argument(
        "--otel-config", metavar="FILE", help="a TOML file of mapping keys for OTel and Langfuse"
    )
    score.add_argument(
        "--chat-config", metavar="FILE", help="a TOML file of mapping keys for chat trajectories"
    )
    score.set_defaults(handler=_cmd_score)
    return score


def _add_backfill(commands: Any) -> None:
    backfill = commands.add_parser(
        "backfill", help="score an archive in chronological chunks of event time (resumable)"
    )
    backfill.add_argument("paths", nargs="+", metavar="PATH", help=_PATHS_HELP)
    backfill.add_argument("--start", required=True, type=_day, help="first UTC day (YYYY-MM-DD)")
    backfill.add_argument("--end", required=True, type=_day, help="last UTC day, inclusive")
    _add_database(backfill)
    _add_data_path(backfill)
    _add_scoring_options(backfill, force=False)
    backfill.add_argument("--chunk-days", type=int, default=1, help="days of event time per chunk")
    add_prefect_flag(backfill)
    backfill.set_defaults(handler=_cmd_backfill)


_PATHS_HELP = (
    "trace exports: files, folders (searched recursively) or glob patterns; each file's "
    "format is recognised from its content (docs/formats.md)"
)


def _add_database(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--db",
        required=True,
        metavar="FILE",
        help="the database: a DuckDB file (created when missing) or ducklake:... (docs/storage.md)",
    )


def _add_scoring_options(command: argparse.ArgumentParser, *, force: bool) -> None:
    """--config and --no-embedder, and --force where files can be read again."""
    command.add_argument(
        "--config",
        metavar="FILE",
        help="a TOML configuration file (docs/configuration.md); the defaults without it",
    )
    command.add_argument(
        "--no-embedder",
        action="store_true",
        help="score without the embedding model: every novelty N is 0.5 (fast; for trying "
        "things out, not for scores you keep)",
    )
    if force:
        command.add_argument(
            "--force",
            action="store_true",
            help="read files again even when the ledger has them with the same content",
        )


def _add_data_path(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--data-path",
        metavar="DIR_OR_URL",
        help="with --db ducklake:...: where a new DuckLake keeps its Parquet files, a folder "
        "or an object-storage URL (default: beside a SQLite catalog, CATALOG.files/); the "
        "DuckLake remembers it",
    )


def _add_demo(commands: Any) -> argparse.ArgumentParser:
    demo = commands.add_parser(
        "demo", help="generate a synthetic archive, score it, show example SQL"
    )
    demo.add_argument(
        "--dir",
        default="tracegrade-demo",
        help="where the archive (DIR/archive/) and the database (DIR/demo.duckdb) go",
    )
    _add_scoring_options(demo, force=True)
    demo.set_defaults(handler=_cmd_demo)
    return demo


def _add_sql(commands: Any) -> None:
    from tracegrade.cli.tables import MODES, NONE

    sql = commands.add_parser(
        "sql",
        help="run a read-only SQL query against a tracegrade database",
        description="Run one read-only SQL query (DuckDB's dialect) against a tracegrade "
        "database and print its rows: a box on a terminal (long values folded; too many "
        "columns, one per line), CSV into a file or a pipe. The tables and views: "
        "docs/storage.md.",
    )
    sql.add_argument("query", help='the SQL, quoted, e.g. "SELECT * FROM latest_scores LIMIT 5"')
    sql.add_argument(
        "--db", required=True, metavar="FILE", help="the database: a DuckDB file or ducklake:..."
    )
    sql.add_argument(
        "--mode",
        choices=MODES,
        help="box (one row a line, fitted to the terminal), line (one column a line), csv, json, "
        "jsonl or markdown; default: box on a terminal, csv otherwise",
    )
    sql.add_argument("--csv", action="store_true", help="the same as --mode csv")
    sql.add_argument("--json", action="store_true", help="the same as --mode json")
    sql.add_argument(
        "--rows",
        type=int,
        metavar="N",
        help=f"rows to print (default {_HUMAN_ROWS} in box, line and markdown; every row in "
        "csv, json and jsonl)",
    )
    sql.add_argument(
        "--null",
        default=NONE,
        metavar="TEXT",
        help=f"how box, line and markdown show a missing value (default {NONE!r})",
    )
    sql.add_argument(
        "--as-of-run",
        type=int,
        metavar="N",
        help="scores and latest_scores as they were after run N (runs.run_seq) published",
    )
    sql.set_defaults(handler=_cmd_sql)


def add_scoring_commands(commands: Any) -> None:
    """Register score, backfill, demo and sql on the CLI's subcommands."""
    score = _add_score(commands)
    _add_backfill(commands)
    demo = _add_demo(commands)
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
        add_prefect_flag(command)
    _add_sql(commands)
