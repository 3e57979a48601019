"""What a judge run did, live or in batches: the counts its report shows, its cost and why it
stopped."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["JudgeRunResult"]


@dataclass
class JudgeRunResult:
    """What a run did.

    Attributes:
        batch: the run used the provider batch API (its counts show batches, not attempts).
        stop_fails_run: the run stopped for a reason that fails it (auth error, circuit
            breaker), whether or not a submission failed.
    """

    batch: bool = False
    submissions: int = 0
    submissions_ok: int = 0
    submissions_failed: int = 0
    submissions_rejected: int = 0
    submissions_left: int = 0
    submissions_pending: int = 0
    cached: int = 0
    shared: int = 0
    """Judgements taken from a near-duplicate answer's (no call)."""
    calls: int = 0
    attempts: int = 0
    batches_submitted: int = 0
    batches_collected: int = 0
    batches_pending: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    cost_usd: float = 0.0
    stop_reason: str | None = None
    stop_fails_run: bool = False

    @property
    def failed(self) -> bool:
        """A submission ended failed, or the run was stopped for a reason that fails it."""
        return self.submissions_failed > 0 or self.stop_fails_run

    def tally(self, status: str) -> None:
        """Count a submission by its overall status."""
        if status == "ok":
            self.submissions_ok += 1
        elif status == "invalid_input":
            self.submissions_rejected += 1
        else:
            self.submissions_failed += 1

    def counts(self) -> dict[str, Any]:
        """Flat counts for reports, in report order."""
        shared = {
            "submissions": self.submissions,
            "submissions_ok": self.submissions_ok,
            "submissions_failed": self.submissions_failed,
            "submissions_rejected": self.submissions_rejected,
        }
        if self.batch:
            mode = {
                "submissions_pending": self.submissions_pending,
                "judgements_cached": self.cached,
                "calls": self.calls,
                "batches_submitted": self.batches_submitted,
                "batches_collected": self.batches_collected,
                "batches_pending": self.batches_pending,
            }
        else:
            mode = {
                "submissions_left": self.submissions_left,
                "judgements_cached": self.cached,
                "judgements_shared": self.shared,
                "calls": self.calls,
                "attempts": self.attempts,
            }
        statuses = {f"status_{k}": v for k, v in sorted(self.statuses.items())}
        return shared | mode | statuses

    def summary(self) -> dict[str, Any]:
        """Counts, cost, stop reason and outcome as plain data (what a Dask shard returns)."""
        return {
            "counts": self.counts(),
            "cost_usd": self.cost_usd,
            "stop_reason": self.stop_reason,
            "stop_fails_run": self.stop_fails_run,
            "failed": self.failed,
        }
