"""`tracegrade import chat`: chat-message trajectories to trace Parquet that `tracegrade score` reads."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_import_command", "import_options"]

from tracegrade.cli.exits import EXIT_NOTHING_SCORED, EXIT_OK

_OPTIONS = (
    (
        "--messages-field",
        "messages_field",
        str,
        "FIELD",
        "field holding the messages (default: traj)",
    ),
    (
        "--objective-field",
        "objective_field",
        str,
        "FIELD",
        "field holding the objective (default: the first user message)",
    ),
    (
        "--success",
        "success",
        str,
        "EXPR",
        "success expression, e.g. 'reward == 1' (the default) or 'info.passed'",
    ),
    ("--confidence-field", "confidence_field", str, "FIELD", "field holding outcome.confidence"),
    (
        "--default-confidence",
        "default_confidence",
        float,
        "X",
        "confidence when no field is given (default: 1.0)",
    ),
    (
        "--created-at-field",
        "created_at_field",
        str,
        "FIELD",
        "field holding an ISO-8601 event time",
    ),
    (
        "--base-time",
        "base_time",
        str,
        "ISO",
        "event time of the first record (default: 1970-01-01T00:00:00Z)",
    ),
    (
        "--time-step",
        "time_step_seconds",
        float,
        "SECONDS",
        "seconds between records' event times (default: 1)",
    ),
    ("--agent-id", "agent_id", str, "ID", "metadata.agent_id of every trace"),
    ("--agent-id-field", "agent_id_field", str, "FIELD", "field holding the agent id"),
    (
        "--domain",
        "task_domain",
        str,
        "NAME",
        "metadata.task_domain of every trace (picks the score profile)",
    ),
    ("--domain-field", "task_domain_field", str, "FIELD", "field holding the domain"),
    (
        "--error-pattern",
        "error_pattern",
        str,
        "REGEX",
        "regex marking a tool result as an error (default: (?i)^\\s*error\\b)",
    ),
)


def _retry_window(text: str) -> int | str:
    if text == "any":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a count; give an integer >= 0 or 'any'"
        ) from None


def import_options(args: argparse.Namespace) -> dict[str, Any]:
    """The `ChatImportConfig` keys given on the command line (options not given are absent)."""
    options = {key: getattr(args, key) for _, key, *_ in _OPTIONS if getattr(args, key) is not None}
    if args.id_from_content:
        options["id_fields"] = []
    elif args.id_field:
        options["id_fields"] = args.id_field
    if args.retry_window is not None:
        options["retry_window"] = args.retry_window
    return options


def _cmd_import_chat(args: argparse.Namespace) -> int:
    from pipelines.chat_import import import_chat

    summary = import_chat(
        args.file, args.out, args.report, args.config, import_options(args)
    )
    print(summary.markdown)
    print(
        f"tracegrade: imported {summary.imported} of {summary.records} trajectories, "
        f"rejected {summary.rejected_total}",
        file=sys.stderr,
    )
    return EXIT_OK if summary.imported else EXIT_NOTHING_SCORED


def add_import_command(commands: Any) -> None:
    """Add `import chat` to the subcommands of the `tracegrade` parser."""
    importer = commands.add_parser("import", help="convert agent logs into trace files")
    kinds = importer.add_subparsers(dest="kind", required=True)
    chat = kinds.add_parser(
        "chat",
        help="OpenAI-style chat trajectories (JSON array or JSONL) to trace Parquet",
        description="Rules and options: docs/import.md.",
    )
    chat.add_argument("file", metavar="FILE", help="a .json array of trajectories or a .jsonl file")
    chat.add_argument("--out", required=True, metavar="FILE", help="the Parquet file to write")
    chat.add_argument(
        "--report", metavar="FILE", help="CSV of rejected trajectories (default: beside --out)"
    )
    chat.add_argument(
        "--config", metavar="FILE", help="a TOML file of mapping keys (docs/import.md)"
    )
    for flag, key, kind, metavar, text in _OPTIONS:
        chat.add_argument(flag, dest=key, type=kind, metavar=metavar, help=text)
    chat.add_argument(
        "--id-field",
        action="append",
        metavar="FIELD",
        help="a field identifying the trajectory (repeat; default: task_id, trial)",
    )
    chat.add_argument(
        "--id-from-content", action="store_true", help="derive trace ids from the record's content"
    )
    chat.add_argument(
        "--retry-window",
        type=_retry_window,
        metavar="N",
        help="tool calls allowed between an error and its retry (default: 3; 'any')",
    )
    chat.set_defaults(handler=_cmd_import_chat)
