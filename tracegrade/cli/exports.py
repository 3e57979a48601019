"""`tracegrade export langfuse-scores`: the verdicts on traces scored from Langfuse exports,
as a file of Langfuse scores (docs/phoenix.md, "Langfuse users: the same through files")."""

from __future__ import annotations

import argparse
from typing import Any

from tracegrade.cli.exits import EXIT_OK
from tracegrade.cli.shared import check_database

__all__ = ["add_export_command"]


def _cmd_langfuse_scores(args: argparse.Namespace) -> int:
    from pipelines.langfuse_scores import langfuse_scores

    check_database(args.db, must_exist=True)
    written = langfuse_scores(list(args.exports), args.db, args.out)
    print(f"tracegrade: {written.text}")
    return EXIT_OK


def add_export_command(commands: Any) -> None:
    """Register `tracegrade export` and its `langfuse-scores`."""
    export = commands.add_parser("export", help="write stored verdicts for other tools")
    kinds = export.add_subparsers(dest="kind", required=True)
    scores = kinds.add_parser(
        "langfuse-scores",
        help="the value score, level, confidence, judge metrics and step confidences of the "
        "traces in Langfuse export files, as Langfuse score API bodies (JSON lines)",
    )
    scores.add_argument(
        "exports", nargs="+", metavar="EXPORT", help="the Langfuse export files that were scored"
    )
    scores.add_argument("--db", required=True, metavar="FILE", help="the DuckDB file")
    scores.add_argument(
        "--out", required=True, metavar="FILE", help="the scores file to write (JSON lines)"
    )
    scores.set_defaults(handler=_cmd_langfuse_scores)
