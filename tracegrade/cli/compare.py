"""`tracegrade compare`: did the candidate get worse than the baseline? (docs/compare.md)"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from tracegrade.cli.exits import EXIT_OK, EXIT_REGRESSION
from tracegrade.cli.shared import check_database

if TYPE_CHECKING:
    from pipelines.report import ReportComparison

__all__ = ["add_compare_command", "comparison", "print_demo_verdict"]


def comparison(
    db: str,
    baseline: str,
    candidate: str,
    *,
    pair_by: str | None = None,
    fail_on: str | None = None,
    as_json: bool = False,
    baseline_db: str | None = None,
    config: str | None = None,
) -> tuple[str, int]:
    """The comparison's text (Markdown, or JSON) and the exit status: 6 when a gate line
    fired, else 0. `pair_by` and `fail_on` override the `[compare]` table of `config`."""
    from pipelines.compare import compare_selections

    check_database(db, must_exist=True)
    if baseline_db is not None:
        check_database(baseline_db, must_exist=True)
    found = compare_selections(
        db,
        baseline,
        candidate,
        pair_by=pair_by,
        fail_on=fail_on,
        baseline_db=baseline_db,
        config=config,
    )
    text = json.dumps(found.data, indent=2) + "\n" if as_json else found.markdown
    return text, EXIT_REGRESSION if found.regression else EXIT_OK


def _cmd_compare(args: argparse.Namespace) -> int:
    text, status = comparison(
        args.db,
        args.baseline,
        args.candidate,
        pair_by=args.pair_by,
        fail_on=args.fail_on,
        as_json=args.json,
        baseline_db=args.baseline_db,
        config=args.config,
    )
    print(text, end="")
    return status


def print_demo_verdict(db: str) -> ReportComparison:
    """Did the agent deployed halfway through the demo's month get worse? The gate's verdict;
    what it compared, for the demo's report to compare too."""
    from pipelines.compare import compare_selections
    from pipelines.report import ReportComparison
    from tracegrade.demo import DEPLOYED
    from transforms.compare.text import gate_text

    baseline, candidate = (f"agent_id = '{agent}'" for agent in DEPLOYED)
    gate = "success < -0.05, score < -0.02, level.ESCALATE > 0.03"
    found = compare_selections(db, baseline, candidate, fail_on=gate)
    print(f"Did {DEPLOYED[0]} get worse when {DEPLOYED[1]} replaced it halfway through?")
    print(f'tracegrade compare --db {db} --baseline "{baseline}" --candidate "{candidate}" \\')
    print(f"    --fail-on '{gate}'")
    print(gate_text(found.verdicts or []))
    return ReportComparison(baseline, candidate, fail_on=gate)


def add_compare_command(commands: Any) -> None:
    """Register `tracegrade compare` on the CLI's subcommands."""
    compare = commands.add_parser(
        "compare",
        help="compare two selections of the stored traces (agent versions, weeks, runs): "
        "each metric's difference with its interval, and a regression gate",
    )
    compare.add_argument("--db", required=True, metavar="FILE", help="the DuckDB file")
    for side, example in (("baseline", "run:12"), ("candidate", "agent_id = 'bot-v2'")):
        compare.add_argument(
            f"--{side}",
            required=True,
            metavar="SELECTION",
            help=f"run:N, time:START..END, or a SQL predicate over the stored traces "
            f"(e.g. {example!r})",
        )
    compare.add_argument(
        "--baseline-db",
        metavar="FILE",
        help="select the baseline from this DuckDB file instead (last month's database, "
        "another scoring configuration); the candidate stays in --db",
    )
    compare.add_argument(
        "--pair-by",
        metavar="COLUMNS",
        help="pair traces of the same task by these columns (comma-separated; default "
        "objective, or the config's [compare] pair_by); 'none' compares two samples",
    )
    compare.add_argument(
        "--fail-on",
        metavar="LINES",
        help="exit 6 when a difference is beyond a line and its interval excludes 0 "
        "(e.g. 'score < -0.02, level.ESCALATE > 0.03'; default the config's [compare] fail_on)",
    )
    compare.add_argument(
        "--config", metavar="FILE", help="a tracegrade TOML file: its [compare] table"
    )
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    compare.set_defaults(handler=_cmd_compare)
