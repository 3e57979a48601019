"""The demo's report in a real browser: headless Chromium (Debian's `chromium`, installed by
`make browser`, which `make test` runs) loads the file with every network request blocked; the
page must log no error, ask for nothing, and draw something in every chart's plot area."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tracegrade.cli import main
from transforms.report import CHARTS

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import chromium_page  # noqa: E402


def test_the_demo_report_loads_offline_and_draws_every_chart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if chromium_page.chromium_binary() is None:
        reason = "no chromium on PATH; `make browser` installs Debian's package (needs root)"
        print(f"skipped: {reason}")
        pytest.skip(reason)
    assert main(["demo", "--dir", str(tmp_path), "--no-embedder"]) == 0
    report = tmp_path / "demo.duckdb.report.html"
    assert f"The report (charts and tables, opens offline): {report}" in capsys.readouterr().out
    screenshot = tmp_path / "first-screen.png"

    check = chromium_page.open_page(report, screenshot)

    assert check.errors == []
    assert check.requests == []
    drawn = {chart["id"]: chart for chart in check.charts}
    page = report.read_text().split("</script>", 1)[1]
    expected = {f"chart-{spec.key}" for spec in CHARTS if f'id="chart-{spec.key}"' in page}
    expected.add("chart-compare")  # the agent deployed halfway against the one it replaced
    assert set(drawn) == expected and len(expected) >= 10  # the demo has no judge results
    for chart in drawn.values():
        assert chart["traces"] > 0 and chart["marks"] > 0, chart
        assert chart["width"] > 0 or chart["height"] > 0, chart
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert screenshot.stat().st_size > 20_000
