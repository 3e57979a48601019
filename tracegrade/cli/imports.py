"""`tracegrade import chat` and `import otel`: agent logs (chat-message trajectories, OpenTelemetry
spans) to trace Parquet that `tracegrade score` reads."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_import_command"]

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
        "--answer-field",
        "answer_field",
        str,
        "FIELD",
        "field holding the answer (default: the last final-answer call, else assistant text)",
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

    summary = import_chat(args.file, args.out, args.report, args.config, import_options(args))
    print(summary.markdown)
    print(
        f"tracegrade: imported {summary.imported} of {summary.records} trajectories, "
        f"rejected {summary.rejected_total}",
        file=sys.stderr,
    )
    return EXIT_OK if summary.imported else EXIT_NOTHING_SCORED


_OTEL_OPTIONS = (
    (
        "--group-by",
        "group_by",
        str,
        "trace|agent",
        "one trace per OTel trace id (default) or per top-level agent span",
    ),
    (
        "--success",
        "success",
        str,
        "RULE",
        "status (default: ERROR fails, OK succeeds, UNSET is unknown), not_error, ok, or "
        "attribute (with --success-attribute)",
    ),
    (
        "--success-attribute",
        "success_attribute",
        str,
        "KEY",
        "root span attribute holding true or false",
    ),
    (
        "--confidence-attribute",
        "confidence_attribute",
        str,
        "KEY",
        "root span attribute holding the confidence",
    ),
    (
        "--default-confidence",
        "default_confidence",
        float,
        "X",
        "confidence without that attribute (default: 1.0)",
    ),
    (
        "--domain-attribute",
        "task_domain_attribute",
        str,
        "KEY",
        "attribute holding the domain (default: tracegrade.task_domain)",
    ),
    ("--domain", "task_domain", str, "NAME", "domain of traces without the attribute"),
    (
        "--agent-id",
        "agent_id",
        str,
        "ID",
        "agent id of traces with neither gen_ai.agent.name nor service.name",
    ),
)


def _cmd_import_otel(args: argparse.Namespace) -> int:
    from pipelines.otel_import import import_otel

    options = {
        key: getattr(args, key) for _, key, *_ in _OTEL_OPTIONS if getattr(args, key) is not None
    }
    if args.retry_window is not None:
        options["retry_window"] = args.retry_window
    summary = import_otel(args.paths, args.out, args.report, args.config, options)
    print(summary.markdown)
    print(
        f"tracegrade: imported {summary.imported} traces from {summary.spans_read} spans, "
        f"rejected {sum(summary.rejected.values())} traces and {summary.records_rejected} records",
        file=sys.stderr,
    )
    return EXIT_OK if summary.imported else EXIT_NOTHING_SCORED


def _add_otel(kinds: Any) -> None:
    otel = kinds.add_parser(
        "otel",
        help="OpenTelemetry spans (OTLP JSON lines or protobuf, Phoenix span tables) to trace Parquet",
        description="Mapping tables, rules and options: docs/import.md.",
    )
    otel.add_argument(
        "paths", nargs="+", metavar="FILE_OR_DIR", help="span files, folders or globs"
    )
    otel.add_argument("--out", required=True, metavar="FILE", help="the Parquet file to write")
    otel.add_argument(
        "--report",
        metavar="FILE",
        help="CSV of rejected traces and records (default: beside --out)",
    )
    otel.add_argument(
        "--config", metavar="FILE", help="a TOML file of mapping keys (docs/import.md)"
    )
    for flag, key, kind, metavar, text in _OTEL_OPTIONS:
        otel.add_argument(flag, dest=key, type=kind, metavar=metavar, help=text)
    otel.add_argument(
        "--retry-window",
        type=_retry_window,
        metavar="N",
        help="tool calls allowed between a failed tool span and its retry (default: 3; 'any')",
    )
    otel.set_defaults(handler=_cmd_import_otel)


def add_import_command(commands: Any) -> None:
    """Add `import chat` and `import otel` to the subcommands of the `tracegrade` parser."""
    importer = commands.add_parser("import", help="convert agent logs into trace files")
    kinds = importer.add_subparsers(dest="kind", required=True)
    _add_otel(kinds)
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
