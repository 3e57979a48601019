"""The HTML report: Plotly charts of the stored aggregates and the page that holds them."""

from __future__ import annotations

from transforms.report.figures import CHARTS, Chart, ChartSpec
from transforms.report.outcomes import LevelOutcomes
from transforms.report.page import SECTIONS, ReportInputs, report_html

__all__ = [
    "CHARTS",
    "SECTIONS",
    "Chart",
    "ChartSpec",
    "LevelOutcomes",
    "ReportInputs",
    "report_html",
]
