"""The judge run report a person reads: counts, statuses, cost and why a run stopped."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["JudgeReport", "build_judge_report", "nothing_to_collect_report", "skipped_report"]

_LABELS = {
    "submissions": "submissions",
    "submissions_ok": "submissions with an overall score",
    "submissions_failed": "submissions failed (no overall score; retried next run)",
    "submissions_rejected": "submissions rejected: empty or whitespace-only (no call, no score)",
    "submissions_left": "submissions left for the next run",
    "submissions_pending": "submissions waiting for a batch",
    "judgements_cached": "judgements reused from the store (no call)",
    "judgements_shared": "judgements shared from a near-duplicate answer (no call)",
    "calls": "judgements called",
    "attempts": "requests sent (attempts, retries included)",
    "batches_submitted": "batches submitted",
    "batches_collected": "batches collected",
    "batches_pending": "batches still running",
}


@dataclass
class JudgeReport:
    """What a judge run did (or why it was skipped), as numbers and Markdown."""

    run_id: str | None
    status: str
    counts: dict[str, Any] = field(default_factory=dict)
    cost_usd: float = 0.0
    stop_reason: str | None = None
    skipped: str | None = None
    markdown: str = ""

    @property
    def failed(self) -> bool:
        """The run ended failed: a submission failed, or an error stopped it."""
        return self.status == "failed"


def skipped_report(reason: str) -> JudgeReport:
    """The report of a judge step that did not run."""
    text = f"# tracegrade judge: skipped\n\nThe LLM judge was skipped: {reason}.\n"
    return JudgeReport(None, "skipped", skipped=reason, markdown=text)


def nothing_to_collect_report(reason: str) -> JudgeReport:
    """The report of a collecting run that found no batch to collect: it ends completed (a
    scheduled collector on a site without batches is not a failure)."""
    text = f"# tracegrade judge: nothing to collect\n\nNothing was collected: {reason}.\n"
    return JudgeReport(None, "completed", skipped=reason, markdown=text)


def build_judge_report(
    run_id: str,
    status: str,
    counts: dict[str, Any],
    cost_usd: float,
    stop_reason: str | None,
    picked: str | None = None,
) -> JudgeReport:
    """Summarise a judge run; `picked` says which stored traces a selection picked."""
    lines = [f"# tracegrade judge run {run_id}: {status}", ""]
    if picked:
        lines += [f"Judged: {picked}.", ""]
    lines += ["| count | value |", "|---|---|"]
    lines += [f"| {label} | {counts[key]:,} |" for key, label in _LABELS.items() if key in counts]
    statuses = {k.removeprefix("status_"): v for k, v in counts.items() if k.startswith("status_")}
    if statuses:
        lines += ["", "| status | judgements |", "|---|---|"]
        lines += [f"| {name} | {value:,} |" for name, value in sorted(statuses.items())]
    lines += ["", f"Spent (at the configured prices): ${cost_usd:.4f}"]
    if stop_reason:
        lines += ["", f"Stopped early: {stop_reason}"]
    lines += [
        "",
        "Query: SELECT item_id, status, overall_score, error FROM latest_judge_scores "
        "ORDER BY overall_score;",
    ]
    return JudgeReport(run_id, status, counts, cost_usd, stop_reason, None, "\n".join(lines) + "\n")
