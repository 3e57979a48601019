"""Two selections of the stored traces compared (`tracegrade compare`), and every scoring run
against the one before it when the configuration has a gate (`[compare] fail_on`).

The cells are counted in DuckDB (`storage.compare.store`), the statistics are
`transforms.compare`; docs/compare.md says what each number means.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipelines.errors import RegressionFound
from pipelines.runs import in_prefect, publish_markdown
from storage.compare.store import Selected, compare_cells, last_scoring_runs
from storage.config_files import load_settings
from storage.store.duckdb_store import DuckDBStore
from transforms.compare.gate import Verdict, parse_gate, verdicts
from transforms.compare.stats import Difference, compare_groups, holm
from transforms.compare.text import (
    GroupComparison,
    Shown,
    comparison_json,
    comparison_markdown,
    gate_text,
    verdict_line,
)
from transforms.config.compare import CompareConfig
from transforms.errors import ConfigError, TracegradeError

__all__ = ["Comparison", "check_previous_run", "compare_selections", "pair_columns"]


@dataclass(frozen=True)
class Comparison:
    """A comparison done: its Markdown, its JSON object, and whether the gate fired."""

    markdown: str
    data: dict[str, Any]
    verdicts: list[Verdict] | None

    @property
    def regression(self) -> bool:
        """A line of the gate fired."""
        return any(v.fired for v in self.verdicts or ())


def _groups(selected: Selected, compared: list[list[Difference]]) -> list[GroupComparison]:
    """Each domain's and agent's comparison (`compared`: its differences, group by group),
    Holm's correction over every group and metric of its column."""
    found = [
        GroupComparison(g.column, g.value, g.traces, differences)
        for g, differences in zip(selected.groups, compared, strict=True)
    ]
    for column in dict.fromkeys(g.column for g in found):
        mine = [g for g in found if g.column == column]
        corrected = iter(holm([d for g in mine for d in g.differences]))
        for g in mine:
            g.differences[:] = [next(corrected) for _ in g.differences]
    return found


def _gate(
    fail_on: str | None, metrics: list[str], differences: list[Difference]
) -> list[Verdict] | None:
    """The gate's verdicts; a line naming a metric one side has no value of is an error."""
    lines = parse_gate(fail_on, metrics) if fail_on else None
    for line in lines or ():
        found = next(d for d in differences if d.metric == line.metric)
        if found.baseline_n == 0 or found.candidate_n == 0:
            side = "baseline" if found.baseline_n == 0 else "candidate"
            raise ConfigError(
                f"--fail-on names {line.metric}, of which the {side} holds no value "
                "(labels or judge results on one side only); drop the line or select traces "
                "that have it"
            )
    return None if lines is None else verdicts(lines, differences)


def pair_columns(pair_by: str | None, settings: CompareConfig) -> list[str] | None:
    """The columns tasks are paired by: `pair_by` (comma-separated; "none": no pairing), else
    the configuration's."""
    if pair_by is None:
        pair_by = ",".join(settings.pair_by) or "none"
    return None if pair_by == "none" else pair_by.split(",")


def compare_selections(
    db: str,
    baseline: str,
    candidate: str,
    *,
    pair_by: str | None = None,
    fail_on: str | None = None,
    baseline_db: str | None = None,
    config: str | None = None,
    settings: CompareConfig | None = None,
) -> Comparison:
    """`baseline` against `candidate` (selections, docs/compare.md) in the store `db` (the
    baseline from `baseline_db` when given). `pair_by` (comma-separated, or "none") and
    `fail_on` override the `[compare]` table of `config` (or `settings`)."""
    chosen = settings or load_settings(config).compare
    if fail_on is None and chosen.fail_on:
        fail_on = ", ".join(chosen.fail_on)
    columns = pair_columns(pair_by, chosen)
    with DuckDBStore(db, read_only=True) as store:  # it reads: runs may write beside it
        selected = compare_cells(store, baseline, candidate, columns, baseline_db=baseline_db)
    whole = (selected.baseline, selected.candidate, selected.pairs)
    differences, *by_group = compare_groups(
        selected.metrics, [whole, *((g.baseline, g.candidate, g.pairs) for g in selected.groups)]
    )
    gate = _gate(fail_on, selected.metrics, differences)
    shown = Shown(
        (baseline, candidate),
        (selected.baseline_traces, selected.candidate_traces),
        selected.pairing,
        differences,
        gate,
        _groups(selected, by_group),
    )
    return Comparison(comparison_markdown(shown), comparison_json(shown), gate)


def previous_run_check(db: str, run_id: str, settings: CompareConfig) -> Comparison | None:
    """The traces the run `run_id` read against those the scoring run before it read, gated
    by `settings.fail_on`; None when there is no gate, no earlier run, or nothing new."""
    if not settings.fail_on:
        return None
    with DuckDBStore(db, read_only=True) as store:
        found = last_scoring_runs(store, run_id)
    if len(found) < 2 or found[0][0] != run_id:
        return None
    return compare_selections(db, f"run:{found[1][1]}", f"run:{found[0][1]}", settings=settings)


def check_previous_run(db: str, run_id: str, settings: CompareConfig) -> str:
    """`previous_run_check` as a step of the scoring flow: the comparison published as an
    artifact, a regression a failed task run (inside Prefect; the flow still completes), and
    what the run summary says of it (nothing without a gate)."""
    try:
        found = previous_run_check(db, run_id, settings)
    except TracegradeError as error:  # the run is stored: a comparison that cannot be made
        return f"\n# tracegrade compare: not made\n\nThe run was not compared with the previous one: {error}\n"
    if found is None:
        return ""
    publish_markdown(found.markdown, "compare-previous-run", "this run against the previous")
    if found.regression and in_prefect():
        from prefect import task

        def check() -> None:
            raise RegressionFound(verdict_line(found.verdicts or []))

        task(name="check against the previous run", persist_result=False)(check)(return_state=True)
    gate = gate_text(found.verdicts or [])
    baseline, candidate = found.data["baseline"], found.data["candidate"]
    return (
        "\n# tracegrade compare: this run against the previous one\n\n"
        f"{candidate['selection']} ({candidate['traces']:,} traces) against "
        f"{baseline['selection']} ({baseline['traces']:,} traces), compared as "
        f"{found.data['pairing']}; the whole comparison: tracegrade compare --db {db} "
        f"--baseline {baseline['selection']} --candidate {candidate['selection']}\n\n{gate}"
    )
