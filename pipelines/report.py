"""The HTML report of a database (`tracegrade report`), and the artifacts every flow run
publishes inside Prefect: its summary, a table of the per-domain figures and the report's path.

A flow run inside Prefect writes the report beside its database, as `<database>.report.html`
(`report_path`), so the report artifact always names the newest one; plain runs (the command
line with no Prefect API, tests) write none unless asked with `tracegrade report`.

The Prefect UI is a web page, and browsers do not open `file://` links from one: the report
is on the worker's disk. Where the operator serves the report's folder over HTTP and says at
which address in `TRACEGRADE_REPORT_URL` (docs/operating.md), the artifact is a link to it;
otherwise it is a Markdown artifact with the path and how to get a link. Both show the path
as text. (The report itself is no artifact: the UI renders Markdown and tables, not a page of
charts and their scripts, and the report inlines 4.8 MB of plotly.js.)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from pipelines.runs import in_prefect, publish_markdown, run_logger
from storage.confidence.labels import DEFAULT_LABELS
from storage.report.queries import TABLE_ROWS
from storage.report.store import (
    ReportData,
    ReportWindow,
    plotly_bundle,
    read_report_data,
    write_report_file,
)
from storage.store.duckdb_store import DuckDBStore
from storage.store.locations import locate
from storage.store.store_health import check_store, data_path
from transforms.report import ReportInputs, report_html
from transforms.report.comparison import ComparisonView
from transforms.report.table import Table

__all__ = ["ReportComparison", "ReportWindow", "publish_run", "report_path", "write_report"]

MOVED_SHOWN = 20
"""The tasks that moved most the comparison section lists."""


@dataclass(frozen=True)
class ReportComparison:
    """Two selections the report compares (`report --baseline ... --candidate ...`), as
    `tracegrade compare` takes them."""

    baseline: str
    candidate: str
    pair_by: str | None = None
    fail_on: str | None = None

    def flags(self) -> str:
        """The comparison as `tracegrade report`'s flags."""
        given = (("--pair-by", self.pair_by), ("--fail-on", self.fail_on))
        return f'--baseline "{self.baseline}" --candidate "{self.candidate}"' + "".join(
            f" {flag} '{value}'" for flag, value in given if value is not None
        )


def _comparison_view(db: str | Path, asked: ReportComparison) -> ComparisonView:
    """The comparison section's figures: `tracegrade compare`'s, and the tasks that moved.
    (Imported here: a report without a comparison loads no configuration model.)"""
    from pipelines.compare import compare_selections, pair_columns
    from storage.compare.moved import MOVED_COLUMNS, moved_tasks
    from storage.config_files import load_settings

    settings = load_settings(None).compare  # the defaults: the report takes no --config
    found = compare_selections(
        str(db), asked.baseline, asked.candidate, pair_by=asked.pair_by,
        fail_on=asked.fail_on, settings=settings,
    )  # fmt: skip
    columns = pair_columns(asked.pair_by, settings) or []
    moved = []
    if columns:
        with DuckDBStore(db, read_only=True) as store:
            moved = moved_tasks(store, asked.baseline, asked.candidate, columns, MOVED_SHOWN)
    return ComparisonView(found.data, Table(MOVED_COLUMNS, moved), columns)


REPORT_URL_VARIABLE = "TRACEGRADE_REPORT_URL"
"""The address at which the operator serves the folder of the reports (a web server's URL of
the database's folder); unset, the report artifact shows the path without a link."""


def report_path(db: str | Path) -> Path:
    """Where flow runs write the report of `db`: beside it (a DuckLake's SQLite catalog),
    `<name>.report.html`. A PostgreSQL catalog has no file here: beside the lake's data path
    where that is a folder of this machine (`files/` -> `files.report.html`, outside the folder,
    where DuckLake's cleanup would take it for an orphaned file), else in the current folder."""
    location = locate(db)
    if location.catalog != "postgres":
        path = location.anchor
        return path.with_name(f"{path.name}.report.html")
    with DuckDBStore(db, read_only=True) as store:
        data = data_path(store)
    if data is not None and "://" not in data:
        folder = Path(data.rstrip("/"))
        return folder.with_name(f"{folder.name}.report.html")
    return Path.cwd() / f"{location.anchor.name}.report.html"


def _inputs(data: ReportData) -> ReportInputs:
    return ReportInputs(
        database=data.database,
        window=data.window.describe(),
        generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        traces=data.traces,
        frames=data.frames,
        lists=data.lists,
        absent=data.absent,
        table_rows=TABLE_ROWS,
        outcomes=data.outcomes,
        judge_agreement=data.judge_agreement,
        empty_sections=data.empty_sections,
    )


def write_report(
    db: str | Path,
    out: str | Path,
    window: ReportWindow | None = None,
    labels: str = DEFAULT_LABELS,
    comparison: ReportComparison | None = None,
) -> ReportData:
    """Write the HTML report of the database `db` (opened read-only) to `out`.

    Raises:
        StoreDamaged: a data file the store's catalog names is missing or damaged.
        InputError: a comparison's selection that fails, selects nothing, or the same traces.

    Args:
        db: an existing tracegrade database.
        out: the HTML file to write (replaced whole).
        window: the UTC days to cover; None covers every day.
        labels: the outcome labels the levels are measured against: a labels file or a SQL
            expression over `traces` (`tracegrade confidence --evaluate` takes the same);
            by default each trace's own metadata.success.
        comparison: two selections to compare in the report's first section.
    """
    with DuckDBStore(db, read_only=True) as store:
        check_store(store)  # a missing data file: one line, no page counted around the hole
        data = read_report_data(store, window or ReportWindow(), labels)
    view = None if comparison is None else _comparison_view(db, comparison)
    inputs = replace(_inputs(data), comparison=view)
    write_report_file(out, report_html(inputs, plotly_bundle()))
    return data


def _domain_rows(data: ReportData) -> list[dict[str, object]]:
    """The per-domain figures as the table artifact shows them: quantiles and rates with four
    decimals, as the run summary prints the same figures."""
    frame = data.frames.get("domains")
    if frame is None:
        return []
    return [
        {key: f"{value:.4f}" if isinstance(value, float) else value for key, value in row.items()}
        for row in frame.to_dicts()
    ]


def _report_artifact(db: str | Path, out: Path, key: str) -> None:
    """The report's artifact: a link where `TRACEGRADE_REPORT_URL` says where it is served, a
    note with its path otherwise."""
    from prefect.artifacts import create_link_artifact, create_markdown_artifact

    base = os.environ.get(REPORT_URL_VARIABLE, "").strip()
    description = f"HTML report of {db} (tracegrade report), written to {out}"
    if base:
        create_link_artifact(
            f"{base.rstrip('/')}/{out.name}",
            link_text=str(out),
            key=f"{key}-report",
            description=description,
        )
        return
    create_markdown_artifact(
        f"# The HTML report\n\nWritten on the worker's disk: `{out}`\n\n"
        f"Browsers do not open files of the worker's disk from the Prefect UI. Serve the "
        f"folder `{out.parent}` over HTTP (a web server, or `python -m http.server "
        f"--directory {out.parent} 8081`) and set {REPORT_URL_VARIABLE} to its address in "
        "the worker's environment: this artifact is then a link to the report.\n",
        key=f"{key}-report",
        description=description,
    )


def publish_run(db: str | Path, markdown: str, key: str, description: str) -> None:
    """Inside a Prefect flow run: the run's Markdown summary, a table artifact of the
    per-domain figures, and the report written beside `db` (`_report_artifact`). Elsewhere,
    nothing (the command line prints the summary itself)."""
    publish_markdown(markdown, key, description)
    if not in_prefect():
        return
    from prefect.artifacts import create_table_artifact

    try:
        out = report_path(db).resolve()
        data = write_report(db, out)
    except Exception as error:  # a report that cannot be written must not fail the run
        run_logger().warning("the report of %s was not written: %r", db, error)
        return
    rows = _domain_rows(data)
    create_table_artifact(
        rows or [{"domain": "(no scored traces)"}],
        key=f"{key}-domains",
        description=f"per-domain figures of {db} after this run",
    )
    _report_artifact(db, out, key)
