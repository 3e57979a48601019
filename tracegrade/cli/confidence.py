"""`tracegrade confidence`: intervention levels from the stored traces or a factors table."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tracegrade.cli.exits import EXIT_NOTHING_SCORED, EXIT_OK
from tracegrade.cli.shared import add_prefect_flag, check_database

__all__ = ["add_confidence_command"]


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from storage.confidence_labels import labelled_levels
    from storage.duckdb_store import DuckDBStore
    from transforms.confidence.evaluation import evaluate_levels

    check_database(args.db, must_exist=True)
    with DuckDBStore(args.db, read_only=True) as store:  # it reads: others may too
        cells, unlabelled = labelled_levels(store, args.evaluate, args.source)
    if not cells and unlabelled == 0:
        other = "derived" if args.source == "factors" else "factors"
        how = (
            "tracegrade confidence --db DB --factors FILE computes them from a factors table"
            if args.source == "factors"
            else "a scoring run (tracegrade score) or tracegrade confidence --db DB computes them"
        )
        print(
            f"tracegrade: {args.db} holds no {args.source} levels to evaluate: {how} "
            f"(--source {other} evaluates the {other} levels)",
            file=sys.stderr,
        )
        return EXIT_NOTHING_SCORED
    if not cells:
        print(
            f"tracegrade: none of the {unlabelled:,} {args.source} levels has a label in "
            f"{args.evaluate!r}: check that its ids are the traces' ids (trace_id)",
            file=sys.stderr,
        )
        return EXIT_NOTHING_SCORED
    print(evaluate_levels(cells, unlabelled=unlabelled).markdown)
    return EXIT_OK


def _cmd_confidence(args: argparse.Namespace) -> int:
    if args.evaluate is not None:
        return _cmd_evaluate(args)
    from storage.config_files import load_confidence_config
    from tracegrade.cli.execution import flow, flow_mode

    load_confidence_config(args.config)
    check_database(args.db)
    with flow_mode(args.prefect) as prefect:
        report = flow("confidence_traces", prefect)(
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


def add_confidence_command(commands: Any) -> None:
    """Register `tracegrade confidence` on the CLI's subcommands."""
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
        "--no-embedder",
        action="store_true",
        help="do not embed source_answers: two or more without an agreement get 0.5",
    )
    confidence.add_argument(
        "--force", action="store_true", help="score again traces whose input is unchanged"
    )
    confidence.add_argument(
        "--evaluate",
        metavar="LABELS",
        help="do not score: print how well the stored levels separate outcomes, from a labels "
        "file (trace_id, label 0/1; or a trace file's metadata.success) or a SQL expression "
        "over the traces table (e.g. 'success::INT')",
    )
    confidence.add_argument(
        "--source",
        choices=["derived", "factors"],
        default="derived",
        help="with --evaluate: which stored levels (default derived)",
    )
    add_prefect_flag(confidence)
    confidence.set_defaults(handler=_cmd_confidence)
