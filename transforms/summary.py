"""The run summary a person reads: counts, score quantiles per domain, shareable rate, timings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from transforms.words import NONE

if TYPE_CHECKING:  # a summary of a run that read nothing is made without Polars
    import polars as pl

__all__ = ["RunSummary", "build_summary"]

_COUNT_LABELS = {
    "files_read": "files read",
    "files_loaded": "files loaded",
    "files_quarantined": "files quarantined whole (no row read; below)",
    "files_skipped": "files skipped (loaded by an earlier run, unchanged)",
    "rows_read": "rows read",
    "rows_scored": "rows scored (valid)",
    "rows_quarantined": "rows quarantined",
    "rows_new": "new traces",
    "rows_changed": "changed traces",
    "rows_unchanged": "unchanged traces (kept)",
    "rows_late": "late traces (older than traces already scored in their scope)",
    "rows_rescored": "stored traces re-scored (a late or changed trace entered their novelty window)",
    "rows_out_of_range": "rows outside the backfill's date range (left for another run)",
    "traces_joined": "traces joined with the spans an earlier run kept (its files began them)",
    "traces_kept_open": "traces whose spans are kept: they may go on in the next run's files",
    "chunks_scored": "backfill chunks scored",
    "chunks_already_done": "backfill chunks already done (skipped)",
    "texts_embedded": "texts embedded",
    "texts_cached": "texts found in the embedding cache",
    "texts_other_mode": "texts embedded again: their stored vector was made in another mode",
    "texts_truncated": "texts embedded that were cut at max_seq_length tokens",
    "confidence_traces": "traces given a confidence level (derived)",
    "commit_shards": "shards of rows the Dask workers wrote to the DuckLake",
    "commit_writers": "worker processes that wrote them",
}


@dataclass
class RunSummary:
    """What a run did, as numbers and as Markdown. `domains` and `rules` are None when no run
    was recorded (nothing was delivered, or nothing new)."""

    run_id: str
    status: str
    counts: dict[str, int]
    timings: dict[str, float]
    domains: pl.DataFrame | None
    rules: pl.DataFrame | None
    markdown: str = field(default="")
    levels: pl.DataFrame | None = None

    @property
    def nothing_scored(self) -> bool:
        """True when the run had input but no valid trace in it."""
        return self.counts.get("rows_scored", 0) == 0 and (
            self.counts.get("rows_read", 0) > 0 or self.counts.get("files_quarantined", 0) > 0
        )


def _table(frame: pl.DataFrame) -> list[str]:
    if frame.is_empty():
        return [NONE]
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = [
        "| " + " | ".join(f"{v:.4f}" if isinstance(v, float) else str(v) for v in row) + " |"
        for row in frame.iter_rows()
    ]
    return [header, rule, *body]


def _quarantine_parts(quarantine: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The quarantine's rows of rejected rows, and its files rejected whole (file, rule,
    reason: a file-level row has no row number)."""
    import polars as pl

    if "row_number" not in quarantine.columns:
        return quarantine, pl.DataFrame(schema={"file": pl.String})
    whole = pl.col("row_number").is_null()
    return quarantine.filter(~whole), quarantine.filter(whole).select("file", "rule", "reason")


def build_summary(
    run_id: str,
    status: str,
    counts: dict[str, int],
    timings: dict[str, float],
    domains: pl.DataFrame,
    quarantine: pl.DataFrame,
    levels: pl.DataFrame | None = None,
    embedding: str | None = None,
) -> RunSummary:
    """Summarise a run from the per-domain table of the scores it wrote (domain, traces, p10,
    median, p90, shareable as a rate and shared as a count; `storage.report.summary`), its
    quarantine rows, the intervention levels (level, traces) of its traces when given, and
    the embedding identity (model|mode|max_seq_length) when the run embedded texts."""
    from transforms.confidence.run_summary import level_table

    scored, shared = int(domains["traces"].sum()), int(domains["shared"].sum())
    domains = domains.drop("shared")
    rows, files = _quarantine_parts(quarantine)
    rules = rows.group_by("rule").len("rows").sort(["rows", "rule"], descending=[True, False])
    shown = dict(counts)
    if "files_read" in counts:
        shown["files_loaded"] = counts["files_read"] - counts.get("files_quarantined", 0)
    lines = [f"# tracegrade run {run_id}: {status}", "", "| count | value |", "|---|---|"]
    lines += [
        f"| {label} | {shown[key]:,} |" for key, label in _COUNT_LABELS.items() if key in shown
    ]
    if embedding is not None:
        model, mode, length = (embedding.rsplit("|", 2) + ["", ""])[:3]
        lines += ["", f"Embedding: model {model}, mode {mode}, max_seq_length {length}"]
    rate = f"{shared / scored:.1%}" if scored else "n/a"
    lines += ["", f"Shareable rate of the traces scored in this run: {rate}", ""]
    lines += ["## Scores by domain (traces scored in this run)", "", *_table(domains), ""]
    lines += ["## Quarantine by rule (rows)", "", *_table(rules), ""]
    if not files.is_empty():
        lines += ["## Files quarantined whole", "", *_table(files), ""]
    if levels is not None:
        lines += ["## Intervention levels (derived confidence)", "", *level_table(levels), ""]
    lines += ["## Timings (seconds)", "", "| stage | seconds |", "|---|---|"]
    lines += [f"| {stage} | {seconds:.2f} |" for stage, seconds in timings.items()]
    markdown = "\n".join(lines) + "\n"
    return RunSummary(run_id, status, counts, timings, domains, rules, markdown, levels)
