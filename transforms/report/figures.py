"""The report's charts as Plotly figures, one function per chart, each from an aggregate table
(storage.report.queries): a title, axis titles with units, and a one-line hint on how to read
it. A table that is missing or empty gives no figure; the page says why instead.

A figure is what plotly.js draws: a dict of `data` (the traces) and `layout`, written into the
page as JSON (transforms.report.page). It is built here as plain data, not with Plotly's Python
objects, which would cost the report a third of a second to import for a few dozen
attributes. Numbers go to the page as 4-byte typed arrays (`_values`), as Plotly's own Python
writes them: the page stays small however many points a chart has."""

from __future__ import annotations

import base64
import sys
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from transforms.report.table import Table

__all__ = ["CHARTS", "ChartSpec", "Figure"]

Figure = dict[str, Any]
"""A plotly.js figure: `{"data": [trace, ...], "layout": {...}}`."""

_LEVEL_COLOURS = {
    "SILENT": "#4c9a2a",
    "NOTIFY": "#8fb8de",
    "CONFIRM": "#f0a202",
    "ESCALATE": "#c0392b",
}
"""The levels, calmest first: the order of the stacks and of the legend."""

_TICKS = {"day": 86_400_000, "week": 7 * 86_400_000, "month": "M1"}
"""One tick per day, week or month: a time axis of a single day otherwise ticks by the hour
(one bar labelled `00:00:00 Nov 27, 2026`)."""


@dataclass(frozen=True)
class ChartSpec:
    """How one chart is made: from which aggregate, with what hint, in which section."""

    key: str
    section: str
    frame: str
    hint: str
    build: Callable[[Table], Figure]
    what: str = ""
    """What the chart draws, in words, for the note that replaces it when it has no rows."""


def _figure(title: str, x: str, y: str, *, barmode: str | None = None) -> Figure:
    layout: dict[str, Any] = {
        "title": {"text": title, "x": 0.01},
        "xaxis": {"title": {"text": x}},
        "yaxis": {"title": {"text": y}},
        "height": 360,
        "margin": {"l": 70, "r": 20, "t": 50, "b": 60},
        "legend": {"orientation": "v", "font": {"size": 11}},
        "font": {"family": "system-ui, sans-serif", "size": 12},
        "hovermode": "closest",
    }
    if barmode:
        layout["barmode"] = barmode
    return {"data": [], "layout": layout}


def _add(figure: Figure, kind: str, x: object, y: object, name: str, **more: Any) -> None:
    """One trace: a line (`scatter`) or a `bar` series."""
    figure["data"].append({"type": kind, "x": x, "y": y, "name": name, **more})


def _days(values: Iterable[Any]) -> list[str]:
    """Days as `YYYY-MM-DD` strings: half the bytes of Plotly's timestamps."""
    return [value.strftime("%Y-%m-%d") for value in values]


def _values(values: Iterable[Any], scale: float = 1.0) -> dict[str, str]:
    """Numbers as a float32 typed array (`{"dtype": "f4", "bdata": base64}`, which plotly.js
    reads since 2.28); a missing value is NaN, a gap in the line."""
    floats = array("f", (float("nan") if v is None else float(v) * scale for v in values))
    if sys.byteorder != "little":
        floats.byteswap()
    return {"dtype": "f4", "bdata": base64.b64encode(floats.tobytes()).decode("ascii")}


def _per(table: Table) -> str:
    """`day`, `week` or `month`: what each point of a time chart covers."""
    return str(table.column("unit")[0]) if "unit" in table.columns and table.height else "day"


def _time_axis(figure: Figure, per: str) -> Figure:
    """Ticks at whole days (weeks, months) labelled as dates, however few the points."""
    figure["layout"]["xaxis"].update(
        type="date", dtick=_TICKS.get(per, _TICKS["day"]), tickformat="%Y-%m-%d"
    )
    return figure


def _series(table: Table, by: str) -> list[tuple[str, Table]]:
    return [(str(name), rows) for name, rows in table.groups(by)]


def score_distribution(table: Table) -> Figure:
    figure = _figure(
        "Score distribution per domain and profile", "score (0 to 1)", "traces (% of the series)"
    )
    for name, rows in _series(table, "series"):
        traces = rows.column("traces")
        total = sum(traces)
        _add(
            figure,
            "scatter",
            _values(b + 0.025 for b in rows.column("bin")),
            _values((n / total for n in traces), 100.0),
            name,
            mode="lines+markers",
        )
    return figure


def _agent_lines(table: Table, column: str, figure: Figure, scale: float) -> Figure:
    for name, rows in _series(table, "agent"):
        x = _days(rows.column("day"))
        _add(figure, "scatter", x, _values(rows.column(column), scale), name, mode="lines")
    return _time_axis(figure, _per(table))


def median_score_by_agent(table: Table) -> Figure:
    per = _per(table)
    figure = _figure(f"Median score per agent and {per}", f"{per} (UTC)", "median score (0 to 1)")
    return _agent_lines(table, "median_score", figure, 1.0)


def median_novelty_by_agent(table: Table) -> Figure:
    per = _per(table)
    figure = _figure(
        f"Median novelty per agent and {per}", f"{per} (UTC)", "median novelty N (0 to 1)"
    )
    return _agent_lines(table, "median_novelty", figure, 1.0)


def low_novelty_share(table: Table) -> Figure:
    per = _per(table)
    figure = _figure(
        f"Share of low-novelty traces per agent and {per}",
        f"{per} (UTC)",
        "traces with N < 0.2 (%)",
    )
    return _agent_lines(table, "low_novelty_share", figure, 100.0)


def contributions(table: Table) -> Figure:
    figure = _figure(
        "Mean contribution of C, N, D and O to the score, per domain",
        "task domain",
        "weight x factor (score points, 0 to 1)",
        barmode="stack",
    )
    names = {"C": "C complexity", "N": "N novelty", "D": "D tool diversity", "O": "O outcome"}
    domains = table.column("domain")
    for column, label in names.items():
        _add(figure, "bar", domains, _values(table.column(column)), label)
    return figure


def levels_by_day(table: Table) -> Figure:
    per = _per(table)
    figure = _figure(
        f"Intervention levels per {per}", f"{per} of the trace (UTC)", "traces", barmode="stack"
    )
    for name, colour in _LEVEL_COLOURS.items():  # calmest first, stacked from the bottom
        rows = table.where("level", name)
        if rows.height:
            x = _days(rows.column("day"))
            _add(figure, "bar", x, rows.column("traces"), name, marker={"color": colour})
    figure["layout"]["legend"]["traceorder"] = "normal"
    return _time_axis(figure, per)


def judge_distribution(table: Table) -> Figure:
    figure = _figure(
        "Judge score distribution per metric", "score (0 to 100)", "results", barmode="group"
    )
    for name, rows in _series(table, "metric"):
        x = _values(b + 2.5 for b in rows.column("bin"))
        _add(figure, "bar", x, rows.column("results"), name)
    return figure


def judge_status(table: Table) -> Figure:
    figure = _figure(
        "Judge results by status per metric", "metric", "results (latest per item)", barmode="stack"
    )
    for name, rows in _series(table, "status"):
        _add(figure, "bar", rows.column("metric"), rows.column("results"), name)
    return figure


def judge_cost(table: Table) -> Figure:
    per = _per(table)
    figure = _figure(f"Judge cost per {per}", f"{per} judged (UTC)", "cost (USD)", barmode="stack")
    for name, rows in _series(table, "model"):
        _add(figure, "bar", _days(rows.column("day")), _values(rows.column("cost_usd")), name)
    return _time_axis(figure, per)


def quarantine_by_day(table: Table) -> Figure:
    per = _per(table)
    figure = _figure(
        f"Quarantined rows per rule and {per}", f"{per} of the run (UTC)", "rows", barmode="stack"
    )
    for name, rows in _series(table, "rule"):
        _add(figure, "bar", _days(rows.column("day")), rows.column("rows"), name)
    return _time_axis(figure, per)


def _run_label(table: Table) -> list[str]:
    return [
        f"#{seq} {flow}"
        for seq, flow in zip(table.column("run_seq"), table.column("flow"), strict=True)
    ]


def run_stages(table: Table) -> Figure:
    figure = _figure(
        "Duration per stage of the latest runs",
        "run (sequence number, flow)",
        "seconds",
        barmode="stack",
    )
    for name, rows in _series(table, "stage"):
        _add(figure, "bar", _run_label(rows), _values(rows.column("seconds")), name)
    order = list(dict.fromkeys(_run_label(table.sorted_by("run_seq"))))
    figure["layout"]["xaxis"].update(type="category", categoryorder="array", categoryarray=order)
    return figure


def run_rows(table: Table) -> Figure:
    figure = _figure("Rows per run", "run (sequence number, flow)", "rows", barmode="group")
    rows = table.sorted_by("run_seq")
    for column in ("rows_read", "rows_scored", "rows_quarantined"):
        _add(figure, "bar", _run_label(rows), rows.column(column), column.replace("_", " "))
    figure["layout"]["xaxis"]["type"] = "category"
    return figure


CHARTS = (
    ChartSpec(
        "score-distribution",
        "scores",
        "score_bins",
        "Each line is one domain and profile; a line shifted left means lower scores.",
        score_distribution,
        what="score distribution",
    ),
    ChartSpec(
        "median-score",
        "agents",
        "agent_days",
        "A line that drops below the others is an agent whose traces are worth less that day.",
        median_score_by_agent,
        what="median scores per agent",
    ),
    ChartSpec(
        "median-novelty",
        "agents",
        "agent_days",
        "Novelty near 0 means the agent repeats what its scope has already seen.",
        median_novelty_by_agent,
        what="median novelty per agent",
    ),
    ChartSpec(
        "low-novelty",
        "agents",
        "agent_days",
        "A rising share means more near-duplicate traces; the top agents are drawn, the rest "
        "are one line.",
        low_novelty_share,
        what="share of low-novelty traces",
    ),
    ChartSpec(
        "contributions",
        "scores",
        "contributions",
        "Each bar adds up to the domain's mean score before overrides; the tallest segment "
        "drives it.",
        contributions,
        what="contributions of C, N, D and O",
    ),
    ChartSpec(
        "levels",
        "levels",
        "level_days",
        "Red (ESCALATE) and amber (CONFIRM) segments are the traces that need a human.",
        levels_by_day,
        what="levels per day",
    ),
    ChartSpec(
        "judge-distribution",
        "judge",
        "judge_bins",
        "Bars to the left are answers the judge scored low for that metric.",
        judge_distribution,
        what="judge scores",
    ),
    ChartSpec(
        "judge-status",
        "judge",
        "judge_status",
        "Any segment other than ok is a result the judge could not give (see the table).",
        judge_status,
        what="judge results by status",
    ),
    ChartSpec(
        "judge-cost",
        "judge",
        "judge_cost",
        "Spend per day and model; a spike is a re-judge or a new metric.",
        judge_cost,
        what="judge spend",
    ),
    ChartSpec(
        "quarantine",
        "quarantine",
        "quarantine_days",
        "A new colour or a tall bar is an export that broke a rule that day.",
        quarantine_by_day,
        what="quarantined rows per day",
    ),
    ChartSpec(
        "run-stages",
        "runs",
        "run_stages",
        "The tallest segment is the stage to speed up; the latest 60 runs are shown.",
        run_stages,
        what="run stage timings",
    ),
    ChartSpec(
        "run-rows",
        "runs",
        "run_rows",
        "Read minus scored is what was quarantined or left for another run.",
        run_rows,
        what="rows per run",
    ),
)
"""Every chart, in page order."""
