"""`tracegrade confidence`: intervention levels from the stored traces or a factors table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracegrade.cli.exits import EXIT_NOTHING_SCORED, EXIT_OK, EXIT_USAGE
from tracegrade.cli.shared import add_prefect_flag, check_database

if TYPE_CHECKING:
    from transforms.confidence.fitting import Fit, LevelFigures, WeightFit
    from transforms.confidence.level_agreement import Ints
    from transforms.config.confidence import ConfidenceConfig

__all__ = ["add_confidence_command"]


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from storage.confidence.labels import labelled_levels
    from storage.store.duckdb_store import DuckDBStore
    from transforms.confidence.level_agreement import evaluate_levels

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


def _figures_rows(name: str, figures: LevelFigures) -> list[str]:
    cells = [
        f"{count:,} ({rate:.1%} failed)" if rate is not None else f"{count:,}"
        for count, rate in zip(figures.traces, figures.failure_rates, strict=True)
    ]
    return [f"| {name} | {figures.auc:.3f} | " + " | ".join(cells) + " |"]


def _weights_text(fit: WeightFit, configured: dict[str, float]) -> list[str]:
    """The fitted weights beside the configured ones, and the confidence's AUC both ways."""
    lines = [
        "| factor weight | fitted on all | configured |",
        "|---|---|---|",
        *(f"| {name} | {fit.weights[name]:g} | {value:g} |" for name, value in configured.items()),
        "",
        "| confidence AUC, mean over the folds | fitted without the fold | configured |",
        "|---|---|---|",
        f"| | {fit.fitted_confidence_auc:.3f} | {fit.configured_confidence_auc:.3f} |",
        "",
    ]
    if not fit.fitted_confidence_auc > fit.configured_confidence_auc:
        lines += [
            "Out of fold the fitted weights separate the outcomes no better than the "
            "configured ones: these labels do not tell the weights apart. Fit the thresholds "
            "alone (without --fit-weights), or fit on more labelled traces.",
            "",
        ]
    return lines


def _fit_text(
    fit: Fit | WeightFit,
    labels: Ints,
    unlabelled: int,
    args: argparse.Namespace,
    weights: list[str],
) -> str:
    """What `--fit` prints: the `weights` lines (with --fit-weights), the thresholds, then the
    levels out of fold beside the defaults'."""
    from transforms.confidence.fitting import DEFAULT_CUTS
    from transforms.confidence.level_agreement import LEVELS

    silent, notify, confirm = fit.cuts
    what = "weights and thresholds" if weights else "thresholds"
    title = "Factor weights and level thresholds" if weights else "Level thresholds"
    defaults = "configured weights, default thresholds" if weights else "defaults"
    lines = [
        f"# {title} fitted to labels",
        "",
        f"Labelled traces: {len(labels):,} ({int(labels.sum()):,} good); unlabelled, left "
        f"out: {unlabelled:,}. Cross-validation: {args.folds} folds, seed {args.seed}; each "
        f"fold's levels come from {what} fitted on the other folds.",
        "",
        *weights,
        "| thresholds (silent, notify, confirm) | fitted on all | defaults |",
        "|---|---|---|",
        f"| | {silent:.3f}, {notify:.3f}, {confirm:.3f} | "
        + ", ".join(f"{cut:g}" for cut in DEFAULT_CUTS)
        + " |",
        "",
        f"| levels | level AUC | {' | '.join(LEVELS)} |",
        "|---|---|" + "---|" * 4,
        *_figures_rows("fitted (out of fold)", fit.fitted),
        *_figures_rows(defaults, fit.defaults),
        "",
        f"Wrote {args.out}: `tracegrade confidence --db DB --config {args.out}` applies it.",
    ]
    return "\n".join(lines)


def _fitted(
    args: argparse.Namespace, settings: ConfidenceConfig
) -> tuple[Fit | WeightFit, Ints, int] | None:
    """The fit `--fit` asks for (with `--fit-weights` the stored labelled traces are scored
    again under candidate weights; without, the stored levels' confidences are cut), the
    labels and how many stored traces or levels have none; None (said why) when the labels
    are too few to fit."""
    import numpy as np

    from storage.confidence.labels import labelled_levels, labelled_trace_rows
    from storage.store.duckdb_store import DuckDBStore
    from transforms.confidence.fitting import (
        cross_validate,
        cross_validate_weights,
        labelled_traces,
    )
    from transforms.confidence.reweighted import ReweightedConfidence

    with DuckDBStore(args.db, read_only=True) as store:
        if args.fit_weights:
            rows, unlabelled = labelled_trace_rows(store, args.fit)
            labels = rows["label"].to_numpy().astype(np.int64)
        else:
            cells, unlabelled = labelled_levels(store, args.fit, args.source)
            scores, labels = labelled_traces(cells)
    if len(set(labels.tolist())) < 2 or len(labels) < 2 * args.folds:
        print(
            f"tracegrade: {len(labels):,} labelled {args.source} traces in {args.fit!r}; "
            f"fitting needs good and failed traces, at least {2 * args.folds} in all",
            file=sys.stderr,
        )
        return None
    if not args.fit_weights:
        return cross_validate(scores, labels, args.folds, args.seed), labels, unlabelled
    score = ReweightedConfidence(rows.drop("label"), settings)
    fit = cross_validate_weights(score, labels, score.configured, args.folds, args.seed)
    return fit, labels, unlabelled


def _cmd_fit(args: argparse.Namespace) -> int:
    """Fit level thresholds (and, with --fit-weights, factor weights first) to labels,
    cross-validated; write them as a profile."""
    from datetime import UTC, datetime

    from storage.config_files import load_confidence_config
    from transforms.confidence.fitting import WeightFit
    from transforms.config.confidence import ConfidenceWeights, Thresholds, profile_toml

    settings = load_confidence_config(args.config)
    check_database(args.db, must_exist=True)
    if args.fit_weights and args.source != "derived":
        print(
            "tracegrade: --fit-weights fits derived mode's weights (--source derived): a "
            "factors table's levels are scored from the factors it gives",
            file=sys.stderr,
        )
        return EXIT_USAGE
    found = _fitted(args, settings)
    if found is None:
        return EXIT_NOTHING_SCORED
    fit, labels, unlabelled = found
    today = datetime.now(UTC).date().isoformat()
    name = f"fitted on {Path(args.fit).name if Path(args.fit).is_file() else args.fit}, {today}"
    silent, notify, confirm = fit.cuts
    update: dict[str, Any] = {
        "thresholds": Thresholds(silent=silent, notify=notify, confirm=confirm),
        "profile": name,
    }
    what, against, weights = "level thresholds", "the GRACE defaults", []
    configured = settings.weights.model_dump()
    if isinstance(fit, WeightFit):
        update["weights"] = ConfidenceWeights(**fit.weights)
        what = (
            "factor weights and level thresholds"
            if fit.weights != configured
            else "level thresholds (weights kept as configured)"
        )
        against = "the configured weights and the default thresholds"
        weights = _weights_text(fit, configured)
    header = [
        f"tracegrade confidence profile: {what} {name}",
        f"({len(labels):,} traces, {unlabelled:,} unlabelled left out); {args.folds}-fold "
        f"cross-validated level AUC {fit.fitted.auc:.3f}",
        f"against {fit.defaults.auc:.3f} for {against} (seed {args.seed}).",
        "A run takes it with --config; the defaults stay the original's (docs/confidence.md).",
    ]
    fitted = settings.model_copy(update=update)
    Path(args.out).write_text(profile_toml(fitted, header), encoding="utf-8")
    print(_fit_text(fit, labels, unlabelled, args, weights))
    return EXIT_OK


def _cmd_confidence(args: argparse.Namespace) -> int:
    if args.fit is not None:
        return _cmd_fit(args)
    if args.fit_weights:
        print("tracegrade: --fit-weights goes with --fit LABELS", file=sys.stderr)
        return EXIT_USAGE
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
        "--fit",
        metavar="LABELS",
        help="do not score: choose the level thresholds that best separate the labelled "
        "outcomes (labels as --evaluate takes them), report them cross-validated beside the "
        "defaults, and write them to --out as a profile a run takes with --config",
    )
    confidence.add_argument(
        "--fit-weights",
        action="store_true",
        help="with --fit: first fit derived mode's factor weights ([confidence.weights]) to "
        "the labels, then the thresholds on the confidence they give; both cross-validated",
    )
    confidence.add_argument(
        "--out", default="confidence-profile.toml", metavar="FILE", help="with --fit: the profile"
    )
    confidence.add_argument(
        "--folds", type=int, default=5, metavar="K", help="with --fit: cross-validation folds"
    )
    confidence.add_argument("--seed", type=int, default=0, help="with --fit: the folds' shuffle")
    confidence.add_argument(
        "--source",
        choices=["derived", "factors"],
        default="derived",
        help="with --evaluate: which stored levels (default derived)",
    )
    add_prefect_flag(confidence)
    confidence.set_defaults(handler=_cmd_confidence)
