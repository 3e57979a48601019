"""`tracegrade pull phoenix` and `tracegrade push phoenix`: spans from a running Phoenix,
scores back to it as annotations (docs/phoenix.md)."""

from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime
from typing import Any

from tracegrade.cli.exits import EXIT_NOTHING_SCORED, EXIT_OK
from tracegrade.cli.shared import check_database, progress_bars

__all__ = ["add_phoenix_commands"]

_DEFAULT_ENDPOINT = "http://127.0.0.1:6006"


def _since(value: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an ISO date or time (e.g. 2026-11-01 or 2026-11-01T00:00:00Z)"
        ) from None
    return moment if moment.tzinfo else moment.astimezone()


def _cmd_pull(args: argparse.Namespace) -> int:
    from pipelines.phoenix import pull_phoenix

    check_database(args.db)
    with progress_bars():
        summary = pull_phoenix(
            args.endpoint,
            args.project,
            args.db,
            since=args.since,
            quiet_s=args.quiet,
            config=args.config,
            no_embedder=args.no_embedder,
            confidence_config=args.confidence_config,
            judge_config=args.judge_config,
        )
    if summary.run is not None:
        print(summary.run.markdown)
    print(f"tracegrade: {summary.text}")
    if summary.run is not None and summary.run.nothing_scored:
        print("tracegrade: nothing could be scored: every trace was quarantined", file=sys.stderr)
        return EXIT_NOTHING_SCORED
    return EXIT_OK


def _cmd_push(args: argparse.Namespace) -> int:
    from pipelines.phoenix import push_phoenix

    check_database(args.db, must_exist=True)
    summary = push_phoenix(args.endpoint, args.project, args.db)
    print(f"tracegrade: {summary.text}")
    return EXIT_OK


def _cmd_push_otlp(args: argparse.Namespace) -> int:
    from pipelines.phoenix import push_otlp

    check_database(args.db, must_exist=True)
    spans, events = push_otlp(args.endpoint, args.db, project=args.project)
    print(
        f"tracegrade: sent {events} gen_ai.evaluation.result events on {spans} evaluation "
        f"spans to {args.endpoint}"
    )
    return EXIT_OK


def _common(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--endpoint",
        default=os.environ.get("PHOENIX_BASE_URL", _DEFAULT_ENDPOINT),
        metavar="URL",
        help="the Phoenix server (default $PHOENIX_BASE_URL, else %(default)s); an API key "
        "is read from $PHOENIX_API_KEY",
    )
    command.add_argument("--project", required=True, metavar="NAME", help="the Phoenix project")
    command.add_argument("--db", required=True, metavar="FILE", help="the DuckDB file")


def add_phoenix_commands(commands: Any) -> None:
    """Register `tracegrade pull` and `tracegrade push` (each with its `phoenix` tool)."""
    pull = commands.add_parser("pull", help="pull spans from a running tool and score them")
    tools = pull.add_subparsers(dest="tool", required=True)
    phoenix = tools.add_parser(
        "phoenix",
        help="pull a Phoenix project's new spans and score its complete traces",
    )
    _common(phoenix)
    phoenix.add_argument(
        "--since",
        type=_since,
        metavar="TIME",
        help="only spans that started at or after TIME (ISO; no zone: this machine's)",
    )
    phoenix.add_argument(
        "--quiet",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="a trace is complete when its root span has arrived and none of its spans ended "
        "in the last SECONDS (default %(default)s)",
    )
    phoenix.add_argument("--config", metavar="FILE", help="a tracegrade TOML file")
    phoenix.add_argument("--no-embedder", action="store_true", help="score without embeddings")
    phoenix.add_argument("--confidence-config", metavar="FILE", help="a confidence TOML file")
    phoenix.add_argument(
        "--judge-config", metavar="FILE", help="an evaluator.toml: judge the new traces too"
    )
    phoenix.set_defaults(handler=_cmd_pull)

    push = commands.add_parser("push", help="write the stored scores back to a running tool")
    targets = push.add_subparsers(dest="tool", required=True)
    phoenix = targets.add_parser(
        "phoenix",
        help="write each pulled trace's value score, level and judge metrics back to Phoenix "
        "as annotations of its root span",
    )
    _common(phoenix)
    phoenix.set_defaults(handler=_cmd_push)
    otlp = targets.add_parser(
        "otlp",
        help="send each pulled trace's verdicts to an OTLP/HTTP receiver as OpenTelemetry "
        "GenAI evaluation results (gen_ai.evaluation.result events)",
    )
    otlp.add_argument(
        "--endpoint",
        required=True,
        metavar="URL",
        help="the receiver's base URL (http://host:4318) or its /v1/traces URL; headers from "
        "$OTEL_EXPORTER_OTLP_HEADERS",
    )
    otlp.add_argument("--db", required=True, metavar="FILE", help="the DuckDB file")
    otlp.add_argument(
        "--project",
        metavar="NAME",
        help="the resource's openinference.project.name: the Phoenix project to file them in",
    )
    otlp.set_defaults(handler=_cmd_push_otlp)
