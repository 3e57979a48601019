"""`tracegrade judge --evaluate` and `--fit`: the stored judgements against labels people gave
the same answers (docs/judge.md, "Agreement with people's labels")."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tracegrade.cli.exits import EXIT_NOTHING_SCORED, EXIT_OK
from tracegrade.cli.judge import config_path
from tracegrade.cli.shared import check_database

if TYPE_CHECKING:
    from transforms.judge.resolve import JudgeConfig

__all__ = ["evaluate_judge", "fit_thresholds"]


def evaluate_judge(args: argparse.Namespace) -> int:
    """Agreement of the stored judgements with labels (transforms/judge/agreement.py)."""
    import json

    from storage.config_files import load_judge_config
    from storage.judge.labels import OVERALL, judged_with_labels
    from storage.store.duckdb_store import DuckDBStore
    from transforms.judge.agreement import agreement_markdown, agreements

    config = load_judge_config(config_path(args), check_keys=False)
    thresholds = {metric.name: metric.pass_threshold for metric in config.metrics}
    check_database(args.db, must_exist=True)
    with DuckDBStore(args.db, read_only=True) as store:  # it reads: others may too
        found = judged_with_labels(store, args.evaluate)
    problem = found.problem(args.evaluate)
    if problem is not None:
        print(f"tracegrade: {problem}", file=sys.stderr)
        return EXIT_NOTHING_SCORED
    results = agreements(
        found.scores, found.labels, thresholds, config.settings.pass_threshold, OVERALL
    )
    if args.json:
        payload = {
            "labels": args.evaluate,
            "judged": found.judged,
            "unlabelled": found.unlabelled,
            "scores": [result.as_json() for result in results],
        }
        print(json.dumps(payload, indent=2))
        return EXIT_OK
    source = "the labels file" if Path(args.evaluate).is_file() else "the SQL expression"
    print(agreement_markdown(results, f"{source} {args.evaluate}", found.unlabelled))
    return EXIT_OK


def _write_fitted(config: JudgeConfig, fitted: dict[str, float], args: argparse.Namespace) -> None:
    """The configuration with the fitted pass thresholds, as TOML in --out (its non-default
    keys; every metric listed, the built-ins too)."""
    from storage.judge.labels import OVERALL
    from transforms.config.base import toml_text
    from transforms.config.judge import MetricEntry

    entries = config.settings.metrics or [MetricEntry(name=m.name) for m in config.metrics]
    settings = config.settings.model_copy(
        update={
            "metrics": [
                e.model_copy(update={"pass_threshold": fitted[m.name]}) if m.name in fitted else e
                for e, m in zip(entries, config.metrics, strict=True)
            ],
            "pass_threshold": fitted.get(OVERALL),
        }
    )
    data = settings.model_dump(mode="json", exclude_defaults=True, exclude_none=True)
    header = f"# {config.source} with pass thresholds fitted on {args.fit} (judge --fit)\n\n"
    Path(args.out).write_text(header + "\n".join(toml_text("", data)) + "\n", encoding="utf-8")


def fit_thresholds(args: argparse.Namespace) -> int:
    """Pass thresholds fitted to binary labels, cross-validated; the configuration with them
    written to --out (transforms/judge/thresholds.py)."""
    from storage.config_files import load_judge_config
    from storage.judge.labels import OVERALL, judged_with_labels
    from storage.store.duckdb_store import DuckDBStore
    from transforms.judge.agreement import figure_text
    from transforms.judge.thresholds import fitted_threshold

    config = load_judge_config(config_path(args), check_keys=False)
    check_database(args.db, must_exist=True)
    with DuckDBStore(args.db, read_only=True) as store:
        found = judged_with_labels(store, args.fit)
    problem = found.problem(args.fit)
    if problem is None and len(found.scale) != 2:
        problem = "fitting a pass threshold needs binary labels (two values, the higher good)"
    if problem is not None:
        print(f"tracegrade: {problem}", file=sys.stderr)
        return EXIT_NOTHING_SCORED
    high = found.scale[1]
    configured = {m.name: m.pass_threshold for m in config.metrics}
    configured[OVERALL] = config.settings.pass_threshold
    fits = {
        name: fitted_threshold(
            name,
            found.scores[name],
            [int(label == high) for label in found.labels[name]],
            configured[name],
            args.folds,
            args.seed,
        )
        for name in configured
        if name in found.scores
    }
    _write_fitted(config, {name: fit.fitted for name, fit in fits.items()}, args)
    print(
        f"# Pass thresholds fitted to labels\n\nLabels: {args.fit}; cross-validation: "
        f"{args.folds} folds, seed {args.seed} (each fold passed at the threshold fitted on the "
        "others).\n\n| score | labelled | configured | kappa | fitted | kappa out of fold |\n"
        "|---|---|---|---|---|---|"
    )
    for fit in fits.values():
        print(
            f"| {fit.name} | {fit.labelled:,} | {fit.configured:g} | "
            f"{figure_text(fit.configured_kappa)} | {fit.fitted:g} | "
            f"{figure_text(fit.cross_validated_kappa)} |"
        )
    print(f"\nWrote {args.out}: `tracegrade judge --config {args.out}` uses it.")
    return EXIT_OK
