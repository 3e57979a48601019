"""The report's levels against outcomes: the figures `tracegrade confidence --evaluate` prints
(ROC AUC of the confidence with its bootstrap and DeLong intervals, the failure rate per
level), for the window's newest levels and the labels the report was given."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from transforms.confidence.level_agreement import (
    LevelRate,
    OutcomeCell,
    OutcomeCells,
    evaluate_levels,
    interval_text,
    rate_verdict,
)
from transforms.words import NONE

__all__ = ["LevelOutcomes", "outcomes_block"]


@dataclass(frozen=True)
class LevelOutcomes:
    """The window's newest levels counted against outcome labels."""

    labels: str
    """What the labels are, in words."""
    cells: OutcomeCells | list[OutcomeCell]
    """Outcome cells (aggregate, level, good, failed) of the labelled traces."""
    unlabelled: int
    """Traces with a level but no label."""
    problem: str | None = None
    """Why the labels could not be read (an older or foreign database)."""


def _note(text: str) -> str:
    return f'<p class="note">{html.escape(text)}</p>'


def _rates(levels: list[LevelRate]) -> str:
    head = "".join(f"<th>{name}</th>" for name in ("level", "traces", "good", "failed"))
    rows = []
    for level, traces, good, failed, rate in levels:
        shown = f"{rate:.1%}" if rate is not None else NONE
        cells = "".join(f'<td class="num">{value:,}</td>' for value in (traces, good, failed))
        rows.append(f'<tr><td>{level}</td>{cells}<td class="num">{shown}</td></tr>')
    return (
        f"<table><thead><tr>{head}<th>failure rate</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def outcomes_block(outcomes: LevelOutcomes | None, missing: list[str] | None) -> str:
    """The block's HTML: the figures, or a note that says why there are none."""
    title = "<h3>Levels against outcomes</h3>"
    if outcomes is None:
        tables = ", ".join(missing or [])
        return title + _note(f"No levels against outcomes: this database has no {tables}.")
    source = f"Labels: {outcomes.labels}."
    if outcomes.problem:
        return title + _note(f"{source} They could not be read: {outcomes.problem}")
    result = evaluate_levels(outcomes.cells, unlabelled=outcomes.unlabelled)
    left_out = f" {outcomes.unlabelled:,} traces with a level but no label are left out."
    if result.traces == 0:
        return title + _note(f"{source} No trace in the window has both a level and a label.")
    if math.isnan(result.auc):
        outcome = "good (1)" if result.good else "failed (0)"
        return title + _note(
            f"{source} All {result.traces:,} labelled traces in the window are {outcome}, so "
            "nothing separates good from failed; give labels with both outcomes "
            "(tracegrade report --labels FILE or a SQL expression)."
            + (left_out if outcomes.unlabelled else "")
        )
    interval = interval_text(result.bootstrap, result.interval)
    counts = (
        f"over {result.traces:,} traces ({result.good:,} good, "
        f"{result.traces - result.good:,} failed).{left_out if outcomes.unlabelled else ''} "
        f"{rate_verdict(result.levels)}"
    )
    summary = (
        f"<p>{html.escape(source)} ROC AUC of the confidence (good above failed): "
        f"<b>{result.auc:.3f}</b>, 95% interval {html.escape(interval)}, {counts}</p>"
    )
    hint = (
        '<p class="hint">0.5 is chance, 1.0 every good trace above every failed one; the '
        "same figures as <code>tracegrade confidence --evaluate</code> prints for these "
        "labels (docs/confidence.md).</p>"
    )
    return title + hint + summary + _rates(result.levels)
