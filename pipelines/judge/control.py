"""What every call of a run consults first: the per-provider rate limit, the spend against
the budget, the circuit breaker, and whether the run has stopped."""

from __future__ import annotations

import asyncio
import time

from pipelines.judge.calls import FAILED_STATUSES, Outcome
from transforms.config.judge import RateLimit
from transforms.judge.environment import parse_error_hint
from transforms.judge.plan import cost_usd
from transforms.judge.resolve import JudgeConfig

__all__ = ["Pacer", "RunControl"]


class Pacer:
    """Spaces out uses of a per-minute allowance (a GCRA without burst)."""

    def __init__(self, per_minute: float) -> None:
        self._seconds_per_unit = 60.0 / per_minute
        self._next = 0.0

    def reserve(self, units: float) -> float:
        now = time.monotonic()
        start = max(now, self._next)
        self._next = start + units * self._seconds_per_unit
        return start - now


class RunControl:
    """Rate limits, spending and the reason a run stopped: what every call consults first."""

    def __init__(self, config: JudgeConfig, budget_usd: float | None, *, batch: bool) -> None:
        self._config = config
        self._batch = batch
        self._budget = budget_usd
        self._limits: dict[str, tuple[Pacer | None, Pacer | None]] = {}
        for provider, limit in config.settings.rate_limits.items():
            self._limits[provider] = self._pacers(limit)
        self.cost = 0.0
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.stop_reason: str | None = None
        self.stop_fails_run = False
        self._failures_in_row = 0
        self._parse_errors_in_row = 0
        self._ok = False
        """Whether any judgement of the run came back ok."""

    @staticmethod
    def _pacers(limit: RateLimit) -> tuple[Pacer | None, Pacer | None]:
        requests = Pacer(limit.requests_per_minute) if limit.requests_per_minute else None
        tokens = Pacer(limit.tokens_per_minute) if limit.tokens_per_minute else None
        return requests, tokens

    def stop(self, reason: str, *, fails_run: bool) -> None:
        """Start no new call from now on."""
        if self.stop_reason is None:
            self.stop_reason = reason
            self.stop_fails_run = fails_run

    async def acquire(self, model: str, tokens: int) -> bool:
        """Wait for the provider's rate limit; False once the run has stopped."""
        if self.stop_reason is None and self._budget is not None and self.cost >= self._budget:
            self.stop(
                f"budget of ${self._budget:.4f} reached (spent ${self.cost:.4f}); "
                "the rest is left for the next run",
                fails_run=False,
            )
        if self.stop_reason is not None:
            return False
        requests, token_pacer = self._limits.get(model.partition(":")[0], (None, None))
        wait = max(
            requests.reserve(1) if requests else 0.0,
            token_pacer.reserve(tokens) if token_pacer else 0.0,
        )
        if wait > 0:
            await asyncio.sleep(wait)
        if self.stop_reason is not None:
            return False
        self.calls += 1
        return True

    def spent(self, model: str, input_tokens: int, output_tokens: int) -> None:
        """Add one response's tokens and cost."""
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.cost += (
            cost_usd(self._config, model, input_tokens, output_tokens, batch=self._batch) or 0.0
        )

    def settled(self, outcome: Outcome) -> None:
        """Count a finished judgement towards the circuit breaker; stop on auth errors."""
        if outcome.stop_run:
            self.stop(f"authentication or quota error: {outcome.error}", fails_run=True)
        if outcome.status in FAILED_STATUSES and outcome.status != "invalid_input":
            self._failures_in_row += 1
            self._parse_errors_in_row += outcome.status == "parse_error"
            limit = self._config.settings.retry.circuit_breaker
            if self._failures_in_row >= limit:
                # a run whose replies never parsed is a configuration to fix, not bad luck
                unparsed = self._parse_errors_in_row == self._failures_in_row and not self._ok
                hint = f"; {parse_error_hint(self._config)}" if unparsed else ""
                self.stop(
                    f"circuit breaker: {self._failures_in_row} judgements failed in a row "
                    f"(last: {outcome.status}: {outcome.error}){hint}",
                    fails_run=True,
                )
        elif outcome.status == "ok":
            self._failures_in_row = self._parse_errors_in_row = 0
            self._ok = True
