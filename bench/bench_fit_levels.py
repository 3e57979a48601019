"""Level thresholds fitted on some labelled sets, measured on the one left out (issue 42).

For each labelled set in turn: the silent, notify and confirm thresholds are fitted
(`transforms.confidence.fitting.fit_cuts`, as `tracegrade confidence --fit` does) on the other
sets' traces pooled, and the held-out set's levels under them are compared with its levels
under the GRACE defaults: the level AUC (a good trace calmer than a failed one, ties half) with
a 95% bootstrap interval (2,000 resamples of the held-out traces, fixed seed), and the traces
and failure rate of each level. Each database holds one set scored with derived levels; the
label is each trace's `metadata.success` (`success::INT`).

Run: .venv/bin/python bench/bench_fit_levels.py tau-bench=tau.duckdb agentdojo=dojo.duckdb ...
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _machine import print_machine  # noqa: E402

from storage.confidence.labels import labelled_levels  # noqa: E402
from storage.store.duckdb_store import DuckDBStore  # noqa: E402
from transforms.confidence.fitting import (  # noqa: E402
    DEFAULT_CUTS,
    fit_cuts,
    labelled_traces,
    level_figures,
    levels_of,
)
from transforms.confidence.level_agreement import LEVELS  # noqa: E402

RESAMPLES = 2_000
SEED = 20_261_128


def labelled(db: str) -> tuple[np.ndarray, np.ndarray]:
    """(confidence, label) of every labelled trace of `db`'s derived levels."""
    with DuckDBStore(db, read_only=True) as store:
        cells, _ = labelled_levels(store, "success::INT", "derived")
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", metavar="NAME=DB")
    args = parser.parse_args()
    sets = dict(item.split("=", 1) for item in args.sets)
    data = {name: labelled(db) for name, db in sets.items()}
    print_machine("level thresholds fitted on the other labelled sets")
    print(
        "| held-out set (traces, failed) | thresholds | level AUC (95% bootstrap) | "
        + " | ".join(LEVELS)
        + " | failure rate rises |"
    )
    print("|---|---|---|" + "---|" * len(LEVELS) + "---|")
    for name, (scores, labels) in data.items():
        others = [data[other] for other in data if other != name]
        pooled_scores = np.concatenate([s for s, _ in others])
        pooled_labels = np.concatenate([lab for _, lab in others])
        fitted = fit_cuts(pooled_scores, pooled_labels)
        title = f"{name} ({len(scores)}, {int((labels == 0).sum())})"
        print(row(f"{title}: defaults", scores, labels, DEFAULT_CUTS))
        print(row(f"{title}: fitted on the others", scores, labels, fitted))


if __name__ == "__main__":
    main()
