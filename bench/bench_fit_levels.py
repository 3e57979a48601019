"""Level thresholds fitted on some labelled sets, measured on the one left out (issue 42).

For each labelled set in turn: the silent, notify and confirm thresholds are fitted
(`transforms.confidence.fitting.fit_cuts`, as `tracegrade confidence --fit` does) on the other
sets' traces pooled, and the held-out set's levels under them are compared with its levels
under the GRACE defaults: the level AUC (a good trace calmer than a failed one, ties half) with
a 95% bootstrap interval (2,000 resamples of the held-out traces, fixed seed), and the traces
and failure rate of each level. Each database holds one set scored with derived levels; the
label is each trace's `metadata.success` (`success::INT`), or what `NAME=DB@LABELS` names (a
file of trace ids and labels, or a SQL expression, as `confidence --evaluate` takes them: for a
set whose files record no outcome, such as a SWE-bench run's trajectories and its report).

With --weights the factor weights are fitted first on the other sets pooled
(`transforms.confidence.fitting.fit_weights`, as `--fit-weights` does; each set's traces scored
again by `transforms.confidence.reweighted`), then the thresholds on the confidence they give,
and each held-out set is shown under both, beside the AUC of its confidence under the fitted
and the configured weights.

Run: .venv/bin/python bench/bench_fit_levels.py tau-bench=tau.duckdb agentdojo=dojo.duckdb ...
    [swe-bench=swe.duckdb@labels.csv]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _machine import print_machine  # noqa: E402

from storage.confidence.labels import labelled_levels, labelled_trace_rows  # noqa: E402
from storage.store.duckdb_store import DuckDBStore  # noqa: E402
from transforms.confidence.fitting import (  # noqa: E402
    DEFAULT_CUTS,
    confidence_auc,
    fit_cuts,
    fit_weights,
    labelled_traces,
    level_figures,
    levels_of,
)
from transforms.confidence.level_agreement import LEVELS  # noqa: E402
from transforms.confidence.reweighted import ReweightedConfidence  # noqa: E402
from transforms.config.confidence import ConfidenceConfig  # noqa: E402

RESAMPLES = 2_000
SEED = 20_261_128


LABELS = "success::INT"


def database_and_labels(given: str) -> tuple[str, str]:
    """`DB` or `DB@LABELS` as (database, labels)."""
    db, _, labels = given.partition("@")
    return db, labels or LABELS


def labelled(given: str) -> tuple[np.ndarray, np.ndarray]:
    """(confidence, label) of every labelled trace of a set's derived levels."""
    db, labels = database_and_labels(given)
    with DuckDBStore(db, read_only=True) as store:
        cells, _ = labelled_levels(store, labels, "derived")
    return labelled_traces(cells)


def interval(scores: np.ndarray, labels: np.ndarray, cuts: tuple[float, ...]) -> str:
    rng = np.random.default_rng(SEED)
    levels = levels_of(scores, cuts)  # type: ignore[arg-type]
    drawn = []
    for _ in range(RESAMPLES):
        at = rng.integers(0, len(scores), len(scores))
        drawn.append(level_figures(levels[at], labels[at]).auc)
    low, high = np.nanpercentile(drawn, [2.5, 97.5])
    return f"{low:.3f} to {high:.3f}"


def row(name: str, scores: np.ndarray, labels: np.ndarray, cuts: tuple[float, ...]) -> str:
    figures = level_figures(levels_of(scores, cuts), labels)  # type: ignore[arg-type]
    cells = [
        f"{rate:.1%} of {count}" if rate is not None else "0"
        for count, rate in zip(figures.traces, figures.failure_rates, strict=True)
    ]
    cut_text = ", ".join(f"{cut:.3f}" for cut in cuts)
    return (
        f"| {name} | {cut_text} | {figures.auc:.3f} ({interval(scores, labels, cuts)}) | "
        + " | ".join(cells)
        + f" | {'yes' if figures.rates_rise else 'no'} |"
    )


class _Pooled:
    """The confidences of several sets' labelled traces under any weights, concatenated."""

    def __init__(self, scorers: list[ReweightedConfidence]) -> None:
        self.scorers = scorers

    def __call__(self, weights: dict[str, float]) -> np.ndarray:
        return np.concatenate([score(weights) for score in self.scorers])


def _print_weights_table(sets: dict[str, str], shown: list[str]) -> None:
    """Weights and thresholds fitted on the other sets, each held-out set under both."""
    config = ConfidenceConfig()
    scorers, labels = {}, {}
    for name, given in sets.items():
        db, marks = database_and_labels(given)
        with DuckDBStore(db, read_only=True) as store:
            rows, _ = labelled_trace_rows(store, marks)
        scorers[name] = ReweightedConfidence(rows.drop("label"), config)
        labels[name] = rows["label"].to_numpy().astype(np.int64)
    configured = config.weights.model_dump()
    print(
        "| held-out set (traces, failed) | weights fitted on the others (changed) | "
        "confidence AUC, configured -> fitted | thresholds | level AUC (95% bootstrap) | "
        + " | ".join(LEVELS)
        + " | failure rate rises |"
    )
    print("|---|---|---|---|---|" + "---|" * len(LEVELS) + "---|")
    for name in shown:
        others = [other for other in sets if other != name]
        pooled = _Pooled([scorers[other] for other in others])
        pooled_labels = np.concatenate([labels[other] for other in others])
        weights = fit_weights(pooled, pooled_labels, configured)
        cuts = fit_cuts(pooled(weights), pooled_labels)
        held, marks = scorers[name], labels[name]
        changed = ", ".join(
            f"{key} {value:g}" for key, value in weights.items() if value != configured[key]
        )
        before = confidence_auc(held(configured), marks)
        after = confidence_auc(held(weights), marks)
        title = f"{name} ({len(marks)}, {int((marks == 0).sum())})"
        line = row(
            f"{title} | {changed or 'none'} | {before:.3f} -> {after:.3f}",
            held(weights),
            marks,
            cuts,
        )
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", metavar="NAME=DB[@LABELS]")
    parser.add_argument(
        "--weights", action="store_true", help="fit the factor weights first, then thresholds"
    )
    parser.add_argument(
        "--held-out",
        action="append",
        metavar="NAME",
        help="show only this set held out (repeatable; default every set in turn)",
    )
    args = parser.parse_args()
    sets = dict(item.split("=", 1) for item in args.sets)
    shown = args.held_out or list(sets)
    unknown = [name for name in shown if name not in sets]
    if unknown:
        parser.error(f"--held-out {', '.join(unknown)}: not among the sets ({', '.join(sets)})")
    if args.weights:
        print_machine("factor weights and level thresholds fitted on the other labelled sets")
        _print_weights_table(sets, shown)
        return
    data = {name: labelled(db) for name, db in sets.items()}
    print_machine("level thresholds fitted on the other labelled sets")
    print(
        "| held-out set (traces, failed) | thresholds | level AUC (95% bootstrap) | "
        + " | ".join(LEVELS)
        + " | failure rate rises |"
    )
    print("|---|---|---|" + "---|" * len(LEVELS) + "---|")
    for name in shown:
        scores, labels = data[name]
        others = [data[other] for other in data if other != name]
        pooled_scores = np.concatenate([s for s, _ in others])
        pooled_labels = np.concatenate([lab for _, lab in others])
        fitted = fit_cuts(pooled_scores, pooled_labels)
        title = f"{name} ({len(scores)}, {int((labels == 0).sum())})"
        print(row(f"{title}: defaults", scores, labels, DEFAULT_CUTS))
        print(row(f"{title}: fitted on the others", scores, labels, fitted))


if __name__ == "__main__":
    main()
