"""`tracegrade report`: one self-contained HTML page of a database's scores, levels, judge
results, quarantine and runs (docs/report.md)."""

from __future__ import annotations

import argparse
from datetime import date
from pathlib import Path
from typing import Any

from tracegrade.cli.exits import EXIT_OK
from tracegrade.cli.shared import check_database

__all__ = ["add_report_command"]


def _day(option: str, text: str | None) -> date | None:
    from storage.errors import InputError

    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise InputError(f"{option} {text!r} is not a date; use YYYY-MM-DD (a UTC day)") from None


def _comparison(args: argparse.Namespace) -> Any:
    """The two selections to compare, or None; one without the other is an error."""
    from pipelines.report import ReportComparison
    from storage.errors import InputError

    if args.baseline is None and args.candidate is None:
        for option in ("pair_by", "fail_on"):
            if getattr(args, option) is not None:
                flag = "--" + option.replace("_", "-")
                raise InputError(f"{flag} needs --baseline and --candidate to compare")
        return None
    if args.baseline is None or args.candidate is None:
        given, missing = ("--baseline", "--candidate")[:: 1 if args.baseline else -1]
        raise InputError(f"{given} needs {missing}: the report compares two selections")
    return ReportComparison(args.baseline, args.candidate, args.pair_by, args.fail_on)


def _cmd_report(args: argparse.Namespace) -> int:
    from pipelines.report import ReportWindow, write_report
    from storage.errors import InputError

    window = ReportWindow(_day("--since", args.since), _day("--until", args.until))
    if window.since and window.until and window.since > window.until:
        raise InputError(
            f"--since {window.since} is after --until {window.until}; give the earlier day first"
        )
    if Path(args.out).is_dir():
        raise InputError(f"--out {args.out} is a folder; give the path of an HTML file")
    comparison = _comparison(args)
    check_database(args.db, must_exist=True)
    data = write_report(args.db, args.out, window, args.labels, comparison)
    size = Path(args.out).stat().st_size
    print(
        f"Wrote {args.out} ({size / 1e6:.1f} MB): {data.traces:,} scored traces, "
        f"{window.describe()}; open it in a browser, it needs no network"
    )
    return EXIT_OK


def add_report_command(commands: Any) -> None:
    """Register `report` on the CLI's subcommands."""
    report = commands.add_parser(
        "report", help="write a self-contained HTML report of a database (charts and tables)"
    )
    report.add_argument("--db", required=True, metavar="FILE", help="the database (read only)")
    report.add_argument("--out", default="report.html", metavar="FILE", help="the HTML file")
    report.add_argument("--since", metavar="DATE", help="first UTC day (YYYY-MM-DD)")
    report.add_argument("--until", metavar="DATE", help="last UTC day, inclusive")
    report.add_argument(
        "--labels",
        default="success::INT",
        metavar="LABELS",
        help="outcome labels to measure the levels against, as confidence --evaluate takes "
        "them: a file (trace_id, label 0/1) or a SQL expression over the traces table "
        "(default: each trace's metadata.success)",
    )
    for side, example in (("baseline", "agent_version = '2.4.0'"), ("candidate", "run:12")):
        report.add_argument(
            f"--{side}",
            metavar="SELECTION",
            help=f"with --{'candidate' if side == 'baseline' else 'baseline'}: a first "
            f"section comparing two selections as tracegrade compare does (e.g. {example!r})",
        )
    report.add_argument(
        "--pair-by", metavar="COLUMNS", help="the comparison's pairing columns (compare's)"
    )
    report.add_argument(
        "--fail-on", metavar="LINES", help="the comparison's gate, for its verdict (compare's)"
    )
    report.set_defaults(handler=_cmd_report)
