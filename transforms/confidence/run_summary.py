"""The report of a confidence run: counts, the level distribution, quarantine by rule."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from transforms.confidence.model import InterventionLevel

__all__ = ["ConfidenceReport", "build_confidence_report", "level_table"]

_COUNT_LABELS = {
    "files_read": "factors files read",
    "rows_read": "factor rows read",
    "rows_quarantined": "factor rows quarantined",
    "rows_scored": "traces given a level in this run",
    "rows_unchanged": "traces unchanged since an earlier run (kept)",
    "llm_fallbacks": "LLM factors that fell back to 0.5",
}


@dataclass
class ConfidenceReport:
    """What a confidence run did, as numbers and Markdown."""

    run_id: str
    source: str
    counts: dict[str, int]
    levels: pl.DataFrame
    markdown: str

    @property
    def nothing_scored(self) -> bool:
        """True when factors mode had input rows but scored no trace and kept none."""
        return (
            self.counts.get("rows_read", 0) > 0
            and self.counts.get("rows_scored", 0) == 0
            and self.counts.get("rows_unchanged", 0) == 0
        )


def level_table(levels: pl.DataFrame) -> list[str]:
    """Markdown rows of a level count frame (level, traces), every level listed in order."""
    counts = dict(zip(levels["level"].to_list(), levels["traces"].to_list(), strict=True))
    total = sum(counts.values())
    lines = ["| level | traces | share |", "|---|---|---|"]
    for level in InterventionLevel:
        n = int(counts.get(level.value, 0))
        share = f"{n / total:.1%}" if total else "n/a"
        lines.append(f"| {level.value} | {n:,} | {share} |")
    return lines


def build_confidence_report(
    run_id: str,
    source: str,
    counts: dict[str, int],
    timings: dict[str, float],
    levels: pl.DataFrame,
    rules: pl.DataFrame,
    thresholds: str = "",
) -> ConfidenceReport:
    """The report of the run `run_id`, with the levels it wrote (level, traces) and its
    quarantined factor rows by rule (rule, rows, example); `thresholds` says which level
    thresholds it used (a fitted profile is named)."""
    lines = [f"# tracegrade confidence run {run_id} ({source} factors)", ""]
    if thresholds:
        lines += [thresholds, ""]
    lines += ["| count | value |", "|---|---|"]
    lines += [f"| {label} | {counts[k]:,} |" for k, label in _COUNT_LABELS.items() if k in counts]
    lines += ["", "## Intervention levels written in this run", "", *level_table(levels), ""]
    if source == "factors":
        lines += ["## Quarantined factor rows by rule", ""]
        if rules.is_empty():
            lines.append("(none)")
        else:
            lines += ["| rule | rows | example |", "|---|---|---|"]
            lines += [f"| {r} | {n:,} | {e} |" for r, n, e in rules.iter_rows()]
        lines.append("")
    lines += ["## Timings (seconds)", "", "| stage | seconds |", "|---|---|"]
    lines += [f"| {stage} | {seconds:.2f} |" for stage, seconds in timings.items()]
    return ConfidenceReport(run_id, source, counts, levels, "\n".join(lines) + "\n")
