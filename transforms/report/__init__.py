"""The HTML report: Plotly charts of the stored aggregates and the page that holds them."""

from __future__ import annotations

from transforms.report.figures import CHARTS, Chart, ChartSpec
from transforms.report.page import SECTIONS, ReportInputs, report_html

__all__ = ["CHARTS", "SECTIONS", "Chart", "ChartSpec", "ReportInputs", "report_html"]
