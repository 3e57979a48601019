"""The report's judge against labels: the figures `tracegrade judge --evaluate` prints
(Spearman's rho, AUC, kappa with their bootstrap intervals) for every metric and the overall
score, against the labels the report was given."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

from transforms.judge.agreement import Agreement, figure_text

__all__ = ["JudgeAgreement", "agreement_block"]


@dataclass(frozen=True)
class JudgeAgreement:
    """The stored judgements' agreement with the report's labels."""

    labels: str
    """What the labels are, in words."""
    results: list[Agreement] = field(default_factory=list)
    unlabelled: int = 0
    """Judged answers without a label."""
    problem: str | None = None
    """Why there are no figures (labels unreadable, one label value only, none matched)."""


def _note(text: str) -> str:
    return f'<p class="note">{html.escape(text)}</p>'


def _figure(value: float | None, interval: tuple[float, float] | None) -> str:
    if value is None:
        return '<td class="none">-</td>'
    if math.isnan(value):
        return '<td class="none">n/a</td>'
    return f'<td class="num">{figure_text(value, interval)}</td>'


def agreement_block(agreement: JudgeAgreement | None, missing: list[str] | None) -> str:
    """The block's HTML: the figures, or a note that says why there are none."""
    title = "<h3>The judge against labels</h3>"
    if agreement is None:
        tables = ", ".join(missing or [])
        return title + _note(f"No judge against labels: this database has no {tables}.")
    source = f"Labels: {agreement.labels}."
    if agreement.problem or not agreement.results:
        return title + _note(f"{source} {agreement.problem or 'No judged answer has one.'}")
    scale = agreement.results[0].scale
    kappa = "kappa" if len(scale) == 2 else "weighted kappa (quadratic)"
    head = "".join(
        f"<th>{name}</th>"
        for name in ("score", "labelled", "pass threshold", "Spearman's rho", "AUC", kappa)
    )
    rows = []
    for result in agreement.results:
        got = result.intervals
        rows.append(
            f"<tr><td>{html.escape(result.name)}</td>"
            f'<td class="num">{result.labelled:,}</td>'
            f'<td class="num">{result.threshold:g}</td>'
            + _figure(result.rho, got.get("rho"))
            + _figure(result.auc, got.get("auc"))
            + _figure(result.kappa, got.get("kappa"))
            + "</tr>"
        )
    left_out = (
        f" {agreement.unlabelled:,} judged answers without a label are left out."
        if agreement.unlabelled
        else ""
    )
    hint = (
        '<p class="hint">How far the judge agrees with the labels, answer by answer: rho 1 '
        "ranks the answers as the labels do; AUC 0.5 is chance; kappa 0 is the agreement of "
        "chance at the pass threshold (50, the middle of the scale; <code>tracegrade judge "
        "--evaluate</code> takes each metric's <code>pass_threshold</code> from the judge "
        "configuration and prints the confusion too). Intervals: 95% bootstrap.</p>"
    )
    return (
        title
        + hint
        + f"<p>{html.escape(source + left_out)}</p>"
        + f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
