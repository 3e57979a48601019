"""`tracegrade judge --check --probe`: one tiny judgement per model and output mode of a
configuration, before a long run spends anything, to learn whether the server answers, in
which output mode, within the cap, and how fast."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace

from pipelines.judge.calls import judge_call
from pipelines.judge.models import (
    ModelFactory,
    effective_output_mode,
    judge_model_factory,
    token_field,
)
from transforms.judge.environment import parse_error_hint
from transforms.judge.resolve import JudgeConfig

__all__ = ["probe_models"]

_QUERY = "What is 2 + 2?"
_ANSWER = "2 + 2 = 4."


@dataclass(frozen=True)
class ProbeResult:
    """How one model answered the probe."""

    model: str
    configured_mode: str
    output_mode: str
    token_field: str
    status: str
    latency_ms: float
    output_tokens: int
    max_tokens: int | None
    error: str | None
    hint: str | None = None
    """What usually fixes a reply that did not parse (`parse_error_hint`)."""

    @property
    def worked(self) -> bool:
        """A judgement came back in the output mode, within the cap when there is one."""
        within = self.max_tokens is None or self.output_tokens <= self.max_tokens
        return self.status == "ok" and within

    def line(self) -> str:
        """The probe's result as `--check --probe` prints it."""
        mode = self.output_mode
        if self.configured_mode == "auto":
            mode += " (auto)"
        cap = "no max_tokens" if self.max_tokens is None else f"max_tokens {self.max_tokens}"
        head = f"  {self.model}: {self.latency_ms:.0f} ms; output mode {mode} "
        head += "worked" if self.status == "ok" else f"failed ({self.status}: {self.error})"
        if self.status == "parse_error" and self.hint:
            head += f"; {self.hint}"
        tail = f"; token field {self.token_field}; {self.output_tokens} output tokens ({cap})"
        if self.status == "ok" and not self.worked:
            tail += ", over the cap: the server ignores the token field (set token_field)"
        return head + tail


class _Open:
    """A gate that lets the probe's one call through at once."""

    async def acquire(self, model: str, tokens: int) -> bool:
        return True

    def spent(self, model: str, input_tokens: int, output_tokens: int) -> None:
        return None


async def _probe_all(config: JudgeConfig, factory: ModelFactory) -> list[ProbeResult]:
    probes: dict[tuple[str, str], ProbeResult] = {}
    for metric in config.metrics:
        if metric.model is None or (metric.model, metric.output_mode) in probes:
            continue
        model = factory(metric.model)
        outcome = await judge_call(
            replace(metric, max_retries=0),
            _QUERY,
            _ANSWER,
            factory=factory,
            policy=config.settings.retry,
            gate=_Open(),
            estimated_tokens=0,
        )
        assert outcome is not None  # the open gate never stops a call
        probes[(metric.model, metric.output_mode)] = ProbeResult(
            model=metric.model,
            configured_mode=metric.output_mode,
            output_mode=effective_output_mode(metric.output_mode, model),
            token_field=token_field(model),
            status=outcome.status,
            latency_ms=outcome.latency_ms,
            output_tokens=outcome.largest_reply,
            max_tokens=metric.max_tokens,
            error=outcome.error,
            hint=parse_error_hint(config) if outcome.status == "parse_error" else None,
        )
    return list(probes.values())


def probe_models(config: JudgeConfig, factory: ModelFactory | None = None) -> list[ProbeResult]:
    """Send one tiny judgement to each (model, output mode) of `config`, in metric order, with
    the metric's parameters and no retry."""
    chosen = factory or judge_model_factory(config.settings.endpoints)
    return asyncio.run(_probe_all(config, chosen))
