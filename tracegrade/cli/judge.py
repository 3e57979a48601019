"""`tracegrade judge`: check a configuration, estimate a run, judge, or collect batches."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracegrade.cli.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from tracegrade.cli.shared import add_prefect_flag, check_database, progress_bars

if TYPE_CHECKING:
    from transforms.judge.resolve import JudgeConfig, ResolvedMetric

__all__ = ["add_judge_command"]

_DEFAULT_CONFIG = "configs/evaluator.toml"
_NONE = "none"


def config_path(args: argparse.Namespace) -> str | None:
    """The configuration file to use, or None for the built-in defaults: `--config FILE`
    (which must exist), else configs/evaluator.toml when it exists; `--config none`, or no
    --config and no configs/evaluator.toml, means the four built-in metrics at equal weights,
    which is said in one line."""
    from transforms.config.judge import BUILTIN_DEFAULTS
    from transforms.judge.metrics import DEFAULT_METRICS

    if args.config is not None and args.config.lower() != _NONE:
        return str(args.config)
    if args.config is None and Path(_DEFAULT_CONFIG).exists():
        return _DEFAULT_CONFIG
    reason = "--config none" if args.config is not None else f"{_DEFAULT_CONFIG} does not exist"
    print(
        f"no configuration file ({reason}): the four built-in metrics at equal weights "
        f"({', '.join(DEFAULT_METRICS)}), model {BUILTIN_DEFAULTS['model']}"
    )
    return None


def _metric_line(metric: ResolvedMetric) -> str:
    """One metric as `--check` lists it: weight, then its model and every parameter set."""
    if not metric.model:
        return f"  {metric.name}: weight {metric.weight:g}; no LLM"
    llm = (
        f"model {metric.model}, temperature {metric.temperature}, max_tokens "
        f"{metric.max_tokens}, max_retries {metric.max_retries}"
    )
    for key in ("timeout_seconds", "top_p", "seed", "stop_sequences", "output_mode"):
        value = getattr(metric, key)
        if value is not None and value != "auto":
            llm += f", {key} {list(value) if key == 'stop_sequences' else value}"
    return f"  {metric.name}: weight {metric.weight:g}; {llm}"


def _needs(config: JudgeConfig) -> None:
    """Print what a live run needs (keys, packages) and whether this machine has it."""
    from transforms.judge.environment import live_run_needs

    print("A live run needs (nothing was called):")
    for line in live_run_needs(config):
        print(line)


def _check(args: argparse.Namespace) -> int:
    from storage.config_files import load_judge_config
    from transforms.judge.environment import check_packages

    # keys are needed to call, not to check a file: the check reports them (a missing
    # provider package is an install to fix, and stays an error)
    config = load_judge_config(config_path(args), check_keys=args.probe)
    if not args.probe:  # the probe's load checked the packages with the keys
        check_packages(config)
    print(f"{config.source}: valid ({config.settings.mode} mode, config hash {config.config_hash})")
    for metric in config.metrics:
        print(_metric_line(metric))
    if not args.probe:
        _needs(config)
        return EXIT_OK
    from pipelines.judge.probe import probe_models

    print("Provider packages and API keys: present for every model")
    print("Probe (one tiny judgement per model and output mode):")
    results = probe_models(config)
    for result in results:
        print(result.line())
    if all(result.worked for result in results):
        return EXIT_OK
    print(
        "tracegrade: the probe failed for "
        f"{', '.join(r.model for r in results if not r.worked)}; see the lines above",
        file=sys.stderr,
    )
    return EXIT_FAILED


def _selection(args: argparse.Namespace) -> Any:
    """The `--select` / `--sample` / `--seed` selection, or None for every stored trace."""
    from storage.judge.inputs import JudgeSelection

    if args.select is None and args.sample is None:
        return None
    return JudgeSelection(args.select, args.sample, args.seed)


def _selection_problem(args: argparse.Namespace) -> str | None:
    """Why the selection flags cannot be used as given, else None."""
    if args.select is None and args.sample is None:
        return "--seed goes with --sample" if args.seed != 0 else None
    if args.table is not None or args.collect:
        return "--select and --sample pick stored traces: not with --table or --collect"
    if args.sample is not None and not 0 < args.sample <= 1:
        return f"--sample is a share of the traces, above 0 and at most 1 (got {args.sample:g})"
    return None


def _dry_run(args: argparse.Namespace) -> int:
    from pipelines.judge.flow import estimate_judge

    estimate, config, chosen = estimate_judge(
        args.db, config_path(args), args.table, _selection(args)
    )
    print("Dry run: nothing was called.")
    if chosen is not None:
        print("Every stored trace:")
        for line in estimate.lines():
            print(f"  {line}")
        estimate, picked = chosen
        print(f"The selection ({picked}):")
        for line in estimate.lines():
            print(f"  {line}")
    else:
        for line in estimate.lines():
            print(line)
    if args.budget is not None:
        fits = "within" if estimate.cost_usd <= args.budget else "over"
        print(f"budget: ${args.budget:.4f} ({fits} budget at the estimate)")
    _needs(config)
    return 0


def _run(args: argparse.Namespace) -> int:
    from storage.config_files import load_judge_config

    path = config_path(args)
    # collecting asks for the keys only when a batch waits (pipelines/judge/flow.judge_collect);
    # they are checked before the run machinery (pydantic-ai, over a second) is imported
    config = load_judge_config(path, check_keys=not args.collect)
    from pipelines.errors import JudgeRunFailed
    from pipelines.judge.flow import check_budget
    from storage.judge.inputs import judge_items_from_table
    from tracegrade.cli.execution import flow, flow_mode

    check_budget(config, args.budget)
    if args.table is not None:
        judge_items_from_table(args.table)  # a table that cannot be read stops before any work
    check_database(args.db)
    dask = config.settings.execution.engine == "dask"
    try:
        with flow_mode(args.prefect or dask) as prefect, progress_bars():
            if args.collect:
                report = flow("judge_collect", prefect)(db=args.db, config=path)
            else:
                report = flow("judge_traces", prefect)(
                    db=args.db,
                    config=path,
                    table=args.table,
                    budget_usd=args.budget,
                    select=args.select,
                    sample=args.sample,
                    seed=args.seed,
                )
    except JudgeRunFailed as exc:
        print(exc)
        print(
            "tracegrade: the judge run failed (see the report above); what was judged is "
            "stored, and the next run retries only the failed or missing judgements",
            file=sys.stderr,
        )
        return EXIT_FAILED
    print(report.markdown)
    return EXIT_OK


def _judge(args: argparse.Namespace) -> int:
    if args.probe and not args.check:
        print("tracegrade: --probe goes with --check (judge --check --probe)", file=sys.stderr)
        return EXIT_USAGE
    if args.check:
        return _check(args)
    if args.db is None:
        print("tracegrade: judge needs --db FILE (except with --check)", file=sys.stderr)
        return EXIT_USAGE
    if args.evaluate is not None or args.fit is not None:
        from tracegrade.cli.judge_labels import evaluate_judge, fit_thresholds

        return evaluate_judge(args) if args.evaluate is not None else fit_thresholds(args)
    problem = _selection_problem(args)
    if problem is not None:
        print(f"tracegrade: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print("tracegrade: --json goes with --evaluate", file=sys.stderr)
        return EXIT_USAGE
    if args.dry_run:
        return _dry_run(args)
    return _run(args)


def _add_selection_arguments(judge: Any) -> None:
    """What to judge (`--select`, `--sample`, `--seed`) and `--evaluate` with `--json`."""
    judge.add_argument(
        "--select",
        metavar="SQL",
        help="judge only the stored traces this SQL predicate selects; it may use the traces' "
        "columns, their newest value score (score, novelty, ...) and level (level, "
        "level_confidence), e.g. \"level IN ('CONFIRM', 'ESCALATE')\"",
    )
    judge.add_argument(
        "--sample",
        type=float,
        metavar="SHARE",
        help="judge this share (e.g. 0.05) of the stored traces --select leaves out, too (of "
        "every trace without --select): a calibration sample, the same traces every run",
    )
    judge.add_argument(
        "--seed", type=int, default=0, help="which traces --sample takes (default 0)"
    )
    judge.add_argument(
        "--evaluate",
        metavar="LABELS",
        help="judge nothing: print how well the stored judgements agree with labels people "
        "gave (a file of trace_id and label, 0/1 or a scale such as 1 to 5; or a SQL "
        "expression over the traces table, e.g. 'success::INT'): Spearman's rho, AUC, kappa "
        "at each metric's pass_threshold, the confusion, with bootstrap intervals",
    )
    judge.add_argument(
        "--json", action="store_true", help="with --evaluate: print the figures as JSON"
    )
    judge.add_argument(
        "--fit",
        metavar="LABELS",
        help="judge nothing: fit each metric's pass_threshold (and the overall one) to binary "
        "labels, cross-validated, and write the configuration with them to --out",
    )
    judge.add_argument(
        "--out", default="evaluator-fitted.toml", metavar="FILE", help="with --fit: the file"
    )
    judge.add_argument("--folds", type=int, default=5, help="with --fit: folds (default 5)")


def add_judge_command(commands: Any) -> None:
    """Register `tracegrade judge` on the CLI's subcommands."""
    judge = commands.add_parser(
        "judge",
        help="judge answers with LLM metrics (configs/evaluator.toml) into DuckDB",
        description="Judge the stored traces' answers (task.objective, outcome.result_summary) "
        "or a table of id, user_query, submission. Re-runs reuse stored judgements.",
    )
    judge.add_argument("--db", metavar="FILE", help="the DuckDB file (created when missing)")
    judge.add_argument(
        "--config",
        metavar="FILE",
        help=f"the judge configuration; default {_DEFAULT_CONFIG} when it exists, else (or "
        "with --config none) the four built-in metrics at equal weights",
    )
    judge.add_argument(
        "--table",
        metavar="FILE",
        help="judge a CSV/JSONL/Parquet table of id, user_query, submission",
    )
    judge.add_argument(
        "--check",
        action="store_true",
        help="validate the configuration and say which API keys and packages a live run needs "
        "(works without them); call nothing",
    )
    judge.add_argument(
        "--probe",
        action="store_true",
        help="with --check: send one tiny judgement to each model and report latency, whether "
        "its output mode worked and the token field used",
    )
    judge.add_argument(
        "--dry-run",
        action="store_true",
        help="print calls, tokens and cost, and the keys a live run needs; call nothing (works "
        "without API keys)",
    )
    judge.add_argument(
        "--budget", type=float, metavar="USD", help="stop starting calls once this much is spent"
    )
    judge.add_argument(
        "--collect", action="store_true", help="collect open batches (batch mode); submit nothing"
    )
    _add_selection_arguments(judge)
    add_prefect_flag(judge)
    judge.set_defaults(handler=_judge)
