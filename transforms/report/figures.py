"""The report's charts as Plotly figures, one function per chart, each from an aggregate frame
(storage.report_queries): a title, axis titles with units, and a one-line hint on how to read
it. A frame that is missing or empty gives no figure; the page says why instead."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import plotly.graph_objects as go
import polars as pl

__all__ = ["CHARTS", "Chart", "ChartSpec"]

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
class Chart:
    """A figure and the sentence printed under its title."""

    key: str
    figure: go.Figure
    hint: str


@dataclass(frozen=True)
class ChartSpec:
    """How one chart is made: from which aggregate, with what hint, in which section."""

    key: str
    section: str
    frame: str
    hint: str
    build: Callable[[pl.DataFrame], go.Figure]
    what: str = ""
    """What the chart draws, in words, for the note that replaces it when it has no rows."""


def _figure(title: str, x: str, y: str, *, barmode: str | None = None) -> go.Figure:
    figure = go.Figure()
    figure.update_layout(
        template="none",
        title={"text": title, "x": 0.01},
        xaxis_title=x,
        yaxis_title=y,
        height=360,
        margin={"l": 70, "r": 20, "t": 50, "b": 60},
        legend={"orientation": "v", "font": {"size": 11}},
        font={"family": "system-ui, sans-serif", "size": 12},
        barmode=barmode,
        hovermode="closest",
    )
    return figure


def _days(column: pl.Series) -> list[str]:
    """Days as `YYYY-MM-DD` strings: half the bytes of Plotly's timestamps."""
    return column.dt.strftime("%Y-%m-%d").to_list()


def _values(column: pl.Series, scale: float = 1.0) -> object:
    """Numbers as float32 (Plotly writes them as 4-byte typed arrays)."""
    return (column.cast(pl.Float64) * scale).cast(pl.Float32).to_numpy()


def _per(frame: pl.DataFrame) -> str:
    """`day`, `week` or `month`: what each point of a time chart covers."""
    return str(frame["unit"][0]) if "unit" in frame.columns and frame.height else "day"


def _time_axis(figure: go.Figure, per: str) -> go.Figure:
    """Ticks at whole days (weeks, months) labelled as dates, however few the points."""
    figure.update_xaxes(type="date", dtick=_TICKS.get(per, _TICKS["day"]), tickformat="%Y-%m-%d")
    return figure


def _series(frame: pl.DataFrame, by: str) -> list[tuple[str, pl.DataFrame]]:
    names = frame[by].unique(maintain_order=True).to_list()
    return [(str(name), frame.filter(pl.col(by) == name)) for name in names]


def score_distribution(frame: pl.DataFrame) -> go.Figure:
    figure = _figure(
        "Score distribution per domain and profile", "score (0 to 1)", "traces (% of the series)"
    )
    for name, rows in _series(frame, "series"):
        share = rows["traces"] / rows["traces"].sum()
        figure.add_scatter(
            x=_values(rows["bin"] + 0.025), y=_values(share, 100.0), name=name, mode="lines+markers"
        )
    return figure


def _agent_lines(frame: pl.DataFrame, column: str, figure: go.Figure, scale: float) -> go.Figure:
    for name, rows in _series(frame, "agent"):
        figure.add_scatter(
            x=_days(rows["day"]), y=_values(rows[column], scale), name=name, mode="lines"
        )
    return _time_axis(figure, _per(frame))


def median_score_by_agent(frame: pl.DataFrame) -> go.Figure:
    per = _per(frame)
    figure = _figure(f"Median score per agent and {per}", f"{per} (UTC)", "median score (0 to 1)")
    return _agent_lines(frame, "median_score", figure, 1.0)


def median_novelty_by_agent(frame: pl.DataFrame) -> go.Figure:
    per = _per(frame)
    figure = _figure(
        f"Median novelty per agent and {per}", f"{per} (UTC)", "median novelty N (0 to 1)"
    )
    return _agent_lines(frame, "median_novelty", figure, 1.0)


def low_novelty_share(frame: pl.DataFrame) -> go.Figure:
    per = _per(frame)
    figure = _figure(
        f"Share of low-novelty traces per agent and {per}",
        f"{per} (UTC)",
        "traces with N < 0.2 (%)",
    )
    return _agent_lines(frame, "low_novelty_share", figure, 100.0)


def contributions(frame: pl.DataFrame) -> go.Figure:
    figure = _figure(
        "Mean contribution of C, N, D and O to the score, per domain",
        "task domain",
        "weight x factor (score points, 0 to 1)",
        barmode="stack",
    )
    names = {"C": "C complexity", "N": "N novelty", "D": "D tool diversity", "O": "O outcome"}
    for column, label in names.items():
        figure.add_bar(x=frame["domain"].to_list(), y=_values(frame[column]), name=label)
    return figure


def levels_by_day(frame: pl.DataFrame) -> go.Figure:
    per = _per(frame)
    figure = _figure(
        f"Intervention levels per {per}", f"{per} of the trace (UTC)", "traces", barmode="stack"
    )
    for name, colour in _LEVEL_COLOURS.items():  # calmest first, stacked from the bottom
        rows = frame.filter(pl.col("level") == name)
        if rows.height:
            figure.add_bar(x=_days(rows["day"]), y=rows["traces"], name=name, marker_color=colour)
    figure.update_layout(legend_traceorder="normal")
    return _time_axis(figure, per)


def judge_distribution(frame: pl.DataFrame) -> go.Figure:
    figure = _figure(
        "Judge score distribution per metric", "score (0 to 100)", "results", barmode="group"
    )
    for name, rows in _series(frame, "metric"):
        figure.add_bar(x=_values(rows["bin"] + 2.5), y=rows["results"], name=name)
    return figure


def judge_status(frame: pl.DataFrame) -> go.Figure:
    figure = _figure(
        "Judge results by status per metric", "metric", "results (latest per item)", barmode="stack"
    )
    for name, rows in _series(frame, "status"):
        figure.add_bar(x=rows["metric"].to_list(), y=rows["results"], name=name)
    return figure


def judge_cost(frame: pl.DataFrame) -> go.Figure:
    per = _per(frame)
    figure = _figure(f"Judge cost per {per}", f"{per} judged (UTC)", "cost (USD)", barmode="stack")
    for name, rows in _series(frame, "model"):
        figure.add_bar(x=_days(rows["day"]), y=_values(rows["cost_usd"]), name=name)
    return _time_axis(figure, per)


def quarantine_by_day(frame: pl.DataFrame) -> go.Figure:
    per = _per(frame)
    figure = _figure(
        f"Quarantined rows per rule and {per}", f"{per} of the run (UTC)", "rows", barmode="stack"
    )
    for name, rows in _series(frame, "rule"):
        figure.add_bar(x=_days(rows["day"]), y=rows["rows"], name=name)
    return _time_axis(figure, per)


def _run_label(frame: pl.DataFrame) -> list[str]:
    return frame.select(pl.format("#{} {}", "run_seq", "flow"))[:, 0].to_list()


def run_stages(frame: pl.DataFrame) -> go.Figure:
    figure = _figure(
        "Duration per stage of the latest runs",
        "run (sequence number, flow)",
        "seconds",
        barmode="stack",
    )
    for name, rows in _series(frame, "stage"):
        figure.add_bar(x=_run_label(rows), y=_values(rows["seconds"]), name=name)
    order = list(dict.fromkeys(_run_label(frame.sort("run_seq"))))
    figure.update_xaxes(type="category", categoryorder="array", categoryarray=order)
    return figure


def run_rows(frame: pl.DataFrame) -> go.Figure:
    figure = _figure("Rows per run", "run (sequence number, flow)", "rows", barmode="group")
    rows = frame.sort("run_seq")
    for column in ("rows_read", "rows_scored", "rows_quarantined"):
        figure.add_bar(x=_run_label(rows), y=rows[column], name=column.replace("_", " "))
    figure.update_xaxes(type="category")
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
