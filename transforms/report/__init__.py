"""The HTML report: plotly.js charts of the stored aggregates and the page that holds them."""

from __future__ import annotations

from transforms.report.figures import CHARTS, ChartSpec, Figure
from transforms.report.outcomes import LevelOutcomes
from transforms.report.page import SECTIONS, ReportInputs, report_html
from transforms.report.table import Table

__all__ = [
    "CHARTS",
    "SECTIONS",
    "ChartSpec",
    "Figure",
    "LevelOutcomes",
    "ReportInputs",
    "Table",
    "report_html",
]
