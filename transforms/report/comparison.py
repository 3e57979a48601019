"""The report's comparison section (`tracegrade report --baseline ... --candidate ...`): what
`tracegrade compare --json` says, drawn. Every metric's difference with its 95% interval in one
chart, the gate's verdict, the tasks whose value score moved most with both sides' levels, and
the differences by domain."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from transforms.report.figures import Figure
from transforms.report.table import Table, table_html
from transforms.words import NONE

__all__ = ["COMPARE_SECTION", "ComparisonView", "comparison_section"]

COMPARE_SECTION = ("compare", "Baseline against candidate")
"""The section's key and title (first on the page when the report compares)."""

_SCALE = 100.0
"""The judge's metrics are on 0-100; every other metric is on 0-1. The chart divides the
judge's by this, so that one axis holds every difference."""

_DOMAIN_METRICS = ("score", "success", "level.ESCALATE")
"""The metrics the by-domain table shows (the whole comparison shows every metric)."""


@dataclass(frozen=True)
class ComparisonView:
    """What the section shows."""

    data: Mapping[str, Any]
    """The comparison as `tracegrade compare --json` prints it."""
    moved: Table
    """The tasks whose value score moved most (`storage.compare.moved.MOVED_COLUMNS`)."""
    pair_by: Sequence[str]
    """The columns tasks are paired by (empty: two samples)."""


def _scale(metric: str) -> float:
    return _SCALE if metric.startswith("judge.") else 1.0


def _number(value: object, digits: int = 4) -> str:
    if not isinstance(value, int | float) or math.isnan(value):
        return NONE
    return f"{value:+.{digits}f}" if digits else f"{value:,}"


def comparison_chart(metrics: Sequence[Mapping[str, Any]]) -> Figure:
    """Each metric's difference (candidate less baseline) as a point with its 95% interval as
    a bar, top to bottom in the comparison's order; the judge's metrics divided by 100."""
    shown = [m for m in metrics if isinstance(m["difference"], int | float)]
    names = [m["metric"] + (" ÷ 100" if _scale(m["metric"]) != 1 else "") for m in shown]
    diff = [m["difference"] / _scale(m["metric"]) for m in shown]
    low = [(m["difference"] - m["low"]) / _scale(m["metric"]) if m["low"] is not None else 0
           for m in shown]  # fmt: skip
    high = [(m["high"] - m["difference"]) / _scale(m["metric"]) if m["high"] is not None else 0
            for m in shown]  # fmt: skip
    text = [
        f"{m['metric']}: {m['baseline_mean']} -> {m['candidate_mean']}, difference "
        f"{m['difference']} [{m['low']}, {m['high']}], p (Holm) {m['p_holm']}"
        for m in shown
    ]
    return {
        "data": [
            {
                "type": "scatter",
                "mode": "markers",
                "x": diff,
                "y": names,
                "error_x": {"type": "data", "symmetric": False, "array": high, "arrayminus": low},
                "hovertext": text,
                "hoverinfo": "text",
                "name": "difference",
            }
        ],
        "layout": {
            "title": {"text": "Candidate less baseline, with 95% intervals", "x": 0.01},
            "xaxis": {
                "title": {"text": "difference (0-1 scales; the judge's 0-100 divided by 100)"},
                "zeroline": True,
                "zerolinewidth": 2,
            },
            "yaxis": {"autorange": "reversed", "automargin": True},
            "height": max(260, 28 * len(shown) + 110),
            "margin": {"l": 150, "r": 20, "t": 50, "b": 60},
            "font": {"family": "system-ui, sans-serif", "size": 12},
            "showlegend": False,
        },
    }


def _differences(metrics: Sequence[Mapping[str, Any]]) -> Table:
    return Table(
        ("metric", "baseline", "candidate", "difference", "95% interval", "p (Holm)"),
        [
            (
                m["metric"],
                _number(m["baseline_mean"]).lstrip("+"),
                _number(m["candidate_mean"]).lstrip("+"),
                _number(m["difference"]),
                f"[{_number(m['low'])}, {_number(m['high'])}]",
                _number(m["p_holm"]).lstrip("+"),
            )
            for m in metrics
        ],
    )


def _by_domain(groups: Sequence[Mapping[str, Any]]) -> Table:
    rows = []
    for group in groups:
        if group["column"] != "task_domain":
            continue
        found = {m["metric"]: m for m in group["metrics"]}
        row: list[Any] = [
            group["value"],
            _number(group["baseline_traces"], 0),
            _number(group["candidate_traces"], 0),
        ]
        for metric in _DOMAIN_METRICS:
            m = found.get(metric)
            row.append(
                NONE
                if m is None
                else f"{_number(m['difference'])} [{_number(m['low'])}, {_number(m['high'])}]"
            )
        rows.append(tuple(row))
    columns = ("domain", "baseline traces", "candidate traces", *_DOMAIN_METRICS)
    return Table(columns, rows)


def _moved(view: ComparisonView) -> str:
    title = "<h3>The tasks that moved most</h3>"
    if not view.pair_by:
        return title + '<p class="note">Compared as two samples (no pairing columns): no task '
        "is on both sides to move.</p>"
    if view.moved.is_empty():
        keys = ", ".join(view.pair_by)
        return title + (
            f'<p class="note">No task ({html.escape(keys)}) has a value score on both '
            "sides: nothing moved that can be told apart from a change of tasks.</p>"
        )
    rows = [
        (
            str(objective),
            str(domain or NONE),
            _number(b_n, 0),
            _number(c_n, 0),
            _number(b_score).lstrip("+"),
            _number(c_score).lstrip("+"),
            _number(moved),
            str(b_level or NONE),
            str(c_level or NONE),
        )
        for objective, domain, b_n, c_n, b_score, c_score, moved, b_level, c_level in view.moved.rows
    ]
    columns = ("objective", "domain", "baseline traces", "candidate traces", "baseline score",
               "candidate score", "moved", "baseline level", "candidate level")  # fmt: skip
    hint = (
        f'<p class="hint">Tasks ({html.escape(", ".join(view.pair_by))}) both sides ran, by how '
        "far their mean value score moved either way; each side's level is that of its newest "
        "trace of the task.</p>"
    )
    return title + hint + table_html(Table(columns, rows))


def comparison_section(view: ComparisonView, plot: Any) -> str:
    """The section's HTML; `plot(div_id, figure)` draws a chart (`transforms.report.page`)."""
    data = view.data
    key, name = COMPARE_SECTION
    b, c = data["baseline"], data["candidate"]
    said = (
        f"Baseline {b['selection']} ({b['traces']:,} traces) against candidate "
        f"{c['selection']} ({c['traces']:,} traces), compared as {data['pairing']}. "
        f"Intervals: {data['bootstrap']['resamples']:,}-resample bootstrap, seed "
        f"{data['bootstrap']['seed']}."
    )
    gate = data.get("gate")
    if gate is None:
        verdict = (
            '<p class="note">No gate: give --fail-on (or the configuration\'s [compare] '
            "fail_on) for a verdict.</p>"
        )
    else:
        fired = sum(line["fired"] for line in gate)
        word = f"REGRESSION ({fired} of {len(gate)} lines)" if fired else "no regression"
        lines = "\n".join(line["text"] for line in gate)
        verdict = (
            f'<p class="note">Verdict: {word}.</p><pre><code>{html.escape(lines)}</code></pre>'
        )
    parts = [
        f'<section id="{key}"><h2>{html.escape(name)}</h2>',
        f"<p>{html.escape(said)}</p>",
        verdict,
        f'<div class="chart">{plot("chart-compare", comparison_chart(data["metrics"]))}</div>',
        "<h3>Every metric</h3>",
        table_html(_differences(data["metrics"])),
        _moved(view),
    ]
    domains = _by_domain(data["groups"])
    parts.append("<h3>By domain</h3>")
    parts.append(
        table_html(domains)
        if domains.rows
        else '<p class="empty">One domain (or none large enough to stand alone).</p>'
    )
    return "".join(parts) + "</section>"
