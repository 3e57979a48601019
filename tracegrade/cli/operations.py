"""`tracegrade operations`: block-edit eval cases scored with a scorer set."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tracegrade.cli.exits import EXIT_CASES_FAILED, EXIT_NOTHING_SCORED, EXIT_OK
from tracegrade.cli.shared import add_prefect_flag, check_database

__all__ = ["add_operations_command"]


def _cmd_operations(args: argparse.Namespace) -> int:
    from storage.config_files import load_scorer_set
    from tracegrade.cli.execution import flow, flow_mode

    load_scorer_set(args.scorers, args.set)
    check_database(args.db)
    with flow_mode(args.prefect) as prefect:
        report = flow("score_operations", prefect)(
            list(args.paths),
            db=args.db,
            scorers=args.scorers,
            scorer_set=args.set,
            force=args.force,
        )
    print(report.markdown)
    if report.nothing_scored:
        print(
            "tracegrade: nothing could be scored: the input holds no eval case, or every "
            "line was quarantined",
            file=sys.stderr,
        )
        return EXIT_NOTHING_SCORED
    if args.check and report.failed:
        print(f"tracegrade: {report.failed} of {report.cases} cases failed", file=sys.stderr)
        return EXIT_CASES_FAILED
    return EXIT_OK


def add_operations_command(commands: Any) -> None:
    """Register `tracegrade operations` on the CLI's subcommands."""
    operations = commands.add_parser(
        "operations", help="score block-edit eval cases (JSONL, Parquet) with a scorer set"
    )
    operations.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="eval case files (JSONL or Parquet), folders or glob patterns (docs/operations.md)",
    )
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
    add_prefect_flag(operations)
    operations.set_defaults(handler=_cmd_operations)
