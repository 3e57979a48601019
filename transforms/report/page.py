"""The report as one self-contained HTML page: plotly.js inlined once, every chart's data as
JSON beside its div (`Plotly.newPlot`), styles inline, no link, font or script fetched from
anywhere."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from dataclasses import dataclass

from transforms.report.comparison import COMPARE_SECTION, ComparisonView, comparison_section
from transforms.report.figures import CHARTS, ChartSpec, Figure
from transforms.report.judge_agreement import JudgeAgreement, agreement_block
from transforms.report.outcomes import LevelOutcomes, outcomes_block
from transforms.report.table import Table, table_html

__all__ = ["ReportInputs", "SECTIONS", "report_html"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 1180px; padding: 0 20px;
       color: #1d2433; }
header { border-bottom: 1px solid #d0d7e2; padding: 12px 0; }
h1 { font-size: 1.5em; margin: 0 0 4px; } h2 { margin-top: 32px; border-bottom: 1px solid #e3e8ef; }
nav a { margin-right: 12px; } .meta, .hint, .note, .more { color: #56627a; font-size: 0.92em; }
.note { background: #f4f6fa; padding: 8px 12px; border-left: 3px solid #b8c2d3; }
.empty { color: #5b6577; font-style: italic; } td.none { color: #5b6577; }
.chart { margin: 18px 0 26px; } .hint { margin: 0 0 2px 8px; }
table { border-collapse: collapse; font-size: 0.88em; margin: 8px 0; }
th, td { border: 1px solid #e0e5ee; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f4f6fa; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #f4f6fa; padding: 8px; white-space: pre-wrap; font-size: 0.85em; }
"""

SECTIONS: tuple[tuple[str, str, tuple[tuple[str, str, str], ...]], ...] = (
    ("overview", "Domains", (("frame", "domains", "Per-domain figures"),)),
    ("scores", "Scores", ()),
    ("agents", "Agents day by day", ()),
    ("levels", "Intervention levels", (("list", "escalate", "ESCALATE traces and why"),)),
    (
        "traces",
        "Traces to look at",
        (
            ("list", "novel_shareable", "The most novel shareable traces"),
            ("list", "lowest_scores", "The lowest-scoring traces"),
        ),
    ),
    (
        "judge",
        "LLM judge",
        (
            ("frame", "judge_metrics", "Per metric (latest result per item)"),
            ("list", "judge_failures", "Results that are not ok"),
        ),
    ),
    ("quarantine", "Quarantine", ()),
    ("runs", "Runs", ()),
    (
        "operations",
        "Operation scorers",
        (
            ("frame", "operation_scorers", "Per scorer set and scorer (latest result per case)"),
            ("list", "failing_cases", "Failing cases, with the first reason their details give"),
        ),
    ),
)
"""Section key, title, and its tables (kind, name, caption); its charts come from CHARTS."""


@dataclass(frozen=True)
class ReportInputs:
    """Everything the page shows, already aggregated (storage.report.store reads it)."""

    database: str
    window: str
    generated_at: str
    traces: int
    frames: Mapping[str, Table]
    lists: Mapping[str, tuple[Table, int, str]]
    absent: Mapping[str, list[str]]
    table_rows: int
    outcomes: LevelOutcomes | None = None
    judge_agreement: JudgeAgreement | None = None
    empty_sections: frozenset[str] = frozenset()
    """Sections whose step never ran: their table holds no row at all (see `_NEVER`)."""
    comparison: ComparisonView | None = None
    """Two selections compared (`report --baseline ... --candidate ...`): the first section."""


def _shown(shown: int, total: int) -> str:
    if total > shown:
        return f"{shown:,} of {total:,} rows shown, and {total - shown:,} more"
    return f"all {total:,} rows shown"


_NEVER = {
    "levels": "No trace has an intervention level yet: scoring runs give each trace one, and "
    "tracegrade confidence --db FILE levels stored traces (docs/confidence.md).",
    "judge": "The LLM judge has not judged anything in this database: tracegrade judge --db "
    "FILE (docs/judge.md) judges the stored answers, and its results show here.",
    "quarantine": "Nothing has been quarantined: every row of every file read so far was valid.",
    "runs": "No run has been recorded in this database.",
    "operations": "No operation scorer has run on this database: tracegrade operations "
    "(docs/operations.md) scores block-edit cases, and its results show here.",
}
"""What an empty section says when its table is empty in the whole database: the step has
not run (or found nothing), which no window explains."""

_UNWINDOWED = frozenset({"operation_scorers", "failing_cases"})
"""Aggregates and tables that cover the whole database whatever the report's window."""


def _none(text: str) -> str:
    return f'<p class="empty">{html.escape(text)}</p>'


def _missing(name: str, inputs: ReportInputs, what: str) -> str | None:
    if name in inputs.absent:
        tables = ", ".join(inputs.absent[name])
        return _none(f"No {what}: this database has no {tables}.")
    return None


def _nothing_here(name: str, what: str, inputs: ReportInputs) -> str:
    """The note of a chart or table with no rows (its section's table is not empty)."""
    if name in _UNWINDOWED:
        return _none(f"No {what}.")
    return _none(f"No {what} in the report's window ({inputs.window}).")


def _table_block(kind: str, name: str, caption: str, inputs: ReportInputs) -> str:
    title = f"<h3>{html.escape(caption)}</h3>"
    missing = _missing(name, inputs, "table")
    if missing:
        return title + missing
    if kind == "frame":
        frame = inputs.frames[name]
        if frame.is_empty():
            return title + _nothing_here(name, "rows", inputs)
        shown = min(frame.height, inputs.table_rows)
        more = f'<p class="more">{_shown(shown, frame.height)}.</p>'
        return title + table_html(frame, inputs.table_rows) + more
    rows, total, sql = inputs.lists[name]
    if total == 0:
        return title + _nothing_here(name, "rows", inputs)
    listing = (
        f'<p class="more">{_shown(rows.height, total)}; the SQL that lists them all '
        '(<code>tracegrade sql --db FILE "..."</code>):</p>'
        f"<pre><code>{html.escape(sql)}</code></pre>"
    )
    return title + table_html(rows, inputs.table_rows) + listing


_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "/": "\\u002f"})
"""JSON inside a <script>: no character that could close the element or start a comment."""

_CONFIG = {"displaylogo": False, "responsive": True}


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False).translate(_SCRIPT_SAFE)


def _plot(div_id: str, figure: Figure) -> str:
    """A chart's div and the script that draws it: plotly.js's own call, with the figure as
    JSON (what Plotly's Python `to_html` writes, without loading Plotly's Python)."""
    height = figure["layout"].get("height", 360)
    return (
        f'<div id="{div_id}" class="plotly-graph-div" style="height:{height}px; width:100%;">'
        f"</div><script>Plotly.newPlot({_json(div_id)}, {_json(figure['data'])}, "
        f"{_json(figure['layout'])}, {_json(_CONFIG)});</script>"
    )


def _chart_block(spec: ChartSpec, inputs: ReportInputs) -> str:
    what = spec.what or spec.key
    missing = _missing(spec.frame, inputs, what)
    if missing:
        return missing
    frame = inputs.frames[spec.frame]
    if frame.is_empty():
        return _nothing_here(spec.frame, what, inputs)
    div = _plot(f"chart-{spec.key}", spec.build(frame))
    return f'<div class="chart"><p class="hint">{html.escape(spec.hint)}</p>{div}</div>'


def _section(
    key: str, title: str, tables: tuple[tuple[str, str, str], ...], inputs: ReportInputs
) -> str:
    parts = [f'<section id="{key}"><h2>{html.escape(title)}</h2>']
    if key in inputs.empty_sections and key in _NEVER:
        return "".join(parts) + _none(_NEVER[key]) + "</section>"
    parts += [_chart_block(spec, inputs) for spec in CHARTS if spec.section == key]
    if key == "levels":
        parts.append(outcomes_block(inputs.outcomes, inputs.absent.get("outcomes")))
    if key == "judge":
        parts.append(agreement_block(inputs.judge_agreement, inputs.absent.get("judge_agreement")))
    parts += [_table_block(kind, name, caption, inputs) for kind, name, caption in tables]
    return "".join(parts) + "</section>"


def report_html(inputs: ReportInputs, plotly_js: str) -> str:
    """The whole page; `plotly_js` is the plotly.js bundle, inlined once."""
    shown = [(key, title) for key, title, _ in SECTIONS]
    if inputs.comparison is not None:
        shown.insert(0, COMPARE_SECTION)
    nav = " ".join(f'<a href="#{key}">{html.escape(title)}</a>' for key, title in shown)
    header = (
        f'<header><h1>tracegrade report</h1><p class="meta">{html.escape(inputs.database)}: '
        f"{inputs.traces:,} scored traces, {html.escape(inputs.window)}; generated "
        f"{html.escape(inputs.generated_at)}. Every figure is an aggregate computed in "
        f"DuckDB.</p><nav>{nav}</nav></header>"
    )
    body = "".join(_section(key, title, tables, inputs) for key, title, tables in SECTIONS)
    if inputs.comparison is not None:
        body = comparison_section(inputs.comparison, _plot) + body
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>tracegrade report</title><style>{_STYLE}</style>"
        f'<script type="text/javascript">{plotly_js}</script></head>'
        f"<body>{header}<main>{body}</main></body></html>"
    )
