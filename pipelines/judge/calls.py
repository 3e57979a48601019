"""One judgement: the request, the structured answer, typed statuses and the one retry layer.

This is the only place tracegrade reaches an LLM. Retries are ours alone: pydantic-ai's and the
provider SDK's are switched off (`max_retries=0` on every request), so an attempt is one HTTP
request and `attempts` counts what the provider saw.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

from pydantic import ValidationError
from pydantic_ai import ModelRequest
from pydantic_ai.direct import model_request
from pydantic_ai.exceptions import (
    ContentFilterError,
    ModelAPIError,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelHTTPError,
    ModelQuotaExceededError,
    ModelRateLimitError,
    ModelRequestTimeout,
    ModelServerError,
    ModelTimeoutError,
    ModelUnavailableError,
    UnexpectedModelBehavior,
)
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import Model, ModelRequestParameters, infer_model
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition

from transforms.config.judge import RetryPolicy
from transforms.judge.metrics import JUDGEMENT_TOOL, Judgement, LLMJudgeMetric
from transforms.judge.providers import pydantic_ai_model
from transforms.judge.resolve import ResolvedMetric

__all__ = [
    "FAILED_STATUSES",
    "STATUSES",
    "Attempt",
    "CallGate",
    "ModelFactory",
    "Outcome",
    "Status",
    "backoff_delay",
    "classify_error",
    "default_model_factory",
    "judge_call",
    "judgement_from",
    "judgement_request",
    "text_reply",
]

Status = Literal[
    "ok",
    "invalid_input",
    "parse_error",
    "refusal",
    "rate_limited",
    "timeout",
    "provider_error",
    "auth_error",
    "metric_error",
]
STATUSES: tuple[Status, ...] = get_args(Status)
FAILED_STATUSES = frozenset(STATUSES) - {"ok"}
"""Every status but ok: the submission gets no overall score."""

ModelFactory = Callable[[str], Model]
"""Turns "provider:model-name" into a pydantic-ai Model (tests pass FunctionModel here)."""

_OUTPUT_TOOL = ToolDefinition(
    name=JUDGEMENT_TOOL,
    description="Record the score (0-100) and the comment of this judgement.",
    parameters_json_schema=Judgement.model_json_schema(),
)


@dataclass(frozen=True)
class Attempt:
    """How one attempt ended, when it did not give a valid judgement."""

    status: Status
    error: str
    transient: bool
    stop_run: bool = False
    retry_after: float | None = None


@dataclass
class Outcome:
    """The final result of one (submission, metric) judgement."""

    status: Status
    score: float | None = None
    comment: str | None = None
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    attempts: int = 0
    stop_run: bool = False
    history: list[str] = field(default_factory=list)
    """The status of each attempt, in order."""
    delays: list[float] = field(default_factory=list)
    """Seconds waited before each retry."""


class CallGate(Protocol):
    """What the run lets a call do: wait for the rate limit, and learn that the run stopped."""

    async def acquire(self, model: str, tokens: int) -> bool:
        """Wait for capacity; False when the run has stopped and the call must not start."""
        ...

    def spent(self, model: str, input_tokens: int, output_tokens: int) -> None:
        """Record the usage of one attempt."""
        ...


_models: dict[str, Model] = {}


def default_model_factory(model: str) -> Model:
    """pydantic-ai's model for "provider:model-name", built once per process.

    Keys and base URLs come from the provider's environment variables (e.g. OPENAI_API_KEY,
    OPENAI_BASE_URL); "openai-chat:" reaches any OpenAI-compatible chat completions server.
    """
    # A model holds the client built from the environment when it was made: a changed base URL
    # or key (another server, a rotated key) gets a new one. Only a digest of the key is kept.
    environment = sorted(
        (name, hashlib.sha256(value.encode()).hexdigest())
        for name, value in os.environ.items()
        if name.endswith(("_BASE_URL", "_API_KEY"))
    )
    key = f"{model}|{environment}"
    if key not in _models:
        _models[key] = infer_model(pydantic_ai_model(model))
    return _models[key]


def judgement_request(
    metric: ResolvedMetric, user_query: str, submission: str, *, timeout_s: float | None
) -> tuple[list[ModelRequest], ModelSettings, ModelRequestParameters]:
    """Messages, settings and the output tool of one judgement request; the metric's own
    `timeout_seconds` replaces `timeout_s` (the run's attempt deadline)."""
    assert isinstance(metric.metric, LLMJudgeMetric)
    prompt = metric.metric.user_prompt(user_query, submission)
    messages = [ModelRequest.user_text_prompt(prompt, instructions=metric.instruction)]
    settings = ModelSettings(max_retries=0)
    if metric.temperature is not None:
        settings["temperature"] = metric.temperature
    if metric.max_tokens is not None:
        settings["max_tokens"] = metric.max_tokens
    if metric.top_p is not None:
        settings["top_p"] = metric.top_p
    if metric.seed is not None:
        settings["seed"] = metric.seed
    if metric.stop_sequences is not None:
        settings["stop_sequences"] = list(metric.stop_sequences)
    if metric.timeout_seconds is not None and timeout_s is not None:
        timeout_s = metric.timeout_seconds
    if timeout_s is not None:
        settings["timeout"] = timeout_s
        settings["request_timeout"] = timeout_s
    parameters = ModelRequestParameters(
        output_mode="tool", output_tools=[_OUTPUT_TOOL], allow_text_output=False
    )
    return messages, settings, parameters


def judgement_from(response: ModelResponse) -> Judgement | Attempt:
    """The judgement in a response, or the reason there is none."""
    if response.finish_reason == "content_filter":
        return Attempt("refusal", "the provider's content filter stopped the answer", False)
    calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
    calls = [p for p in calls if p.tool_name == JUDGEMENT_TOOL] or calls
    if not calls:
        text = " ".join(p.content for p in response.parts if isinstance(p, TextPart)).strip()
        return Attempt(
            "refusal",
            f"the model answered in text instead of calling {JUDGEMENT_TOOL}: {text[:200]!r}",
            True,
        )
    args: Any = calls[0].args
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError as exc:
            return Attempt(
                "parse_error", f"judgement is not valid JSON ({exc}): {args[:200]!r}", True
            )
    try:
        return Judgement.model_validate(args)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'judgement'}={e.get('input')!r}: {e['msg']}"
            for e in exc.errors()
        )
        return Attempt("parse_error", f"judgement out of range or malformed: {problems}", True)


def classify_error(exc: BaseException) -> Attempt:
    """The status of a failed request, whether a retry may help, and whether the run stops."""
    text = f"{type(exc).__name__}: {exc}"[:500]
    if isinstance(exc, ModelAuthenticationError | ModelQuotaExceededError):
        return Attempt("auth_error", text, False, stop_run=True)
    if isinstance(exc, ModelHTTPError) and exc.status_code in (401, 403, 402):
        return Attempt("auth_error", text, False, stop_run=True)
    if isinstance(exc, ModelRateLimitError) or (
        isinstance(exc, ModelHTTPError) and exc.status_code == 429
    ):
        retry_after = exc.retry_after if isinstance(exc, ModelAPIError) else None
        return Attempt("rate_limited", text, True, retry_after=retry_after)
    if isinstance(exc, TimeoutError | ModelTimeoutError | ModelRequestTimeout):
        return Attempt("timeout", text, True)
    if isinstance(exc, ModelHTTPError) and exc.status_code == 408:
        return Attempt("timeout", text, True)
    if isinstance(exc, ModelServerError | ModelUnavailableError | ModelConnectionError):
        return Attempt("provider_error", text, True)
    if isinstance(exc, ModelHTTPError):
        return Attempt("provider_error", text, exc.status_code >= 500)
    if isinstance(exc, ContentFilterError):
        return Attempt("refusal", text, False)
    if isinstance(exc, UnexpectedModelBehavior) or isinstance(exc.__cause__, ValueError):
        # An answer that could not be decoded (a JSONDecodeError is a ValueError).
        return Attempt("parse_error", text, True)
    if isinstance(exc, ModelAPIError):
        return Attempt("provider_error", text, False)
    return Attempt("provider_error", text, False)


def backoff_delay(retry: int, policy: RetryPolicy, retry_after: float | None = None) -> float:
    """Seconds before retry number `retry` (1-based): exponential, jittered, >= Retry-After."""
    delay = min(policy.max_delay_s, policy.base_delay_s * 2 ** (retry - 1))
    delay *= 1 + random.uniform(-policy.jitter, policy.jitter)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return max(0.0, delay)


async def _attempt(
    model: Model,
    request: tuple[list[ModelRequest], ModelSettings, ModelRequestParameters],
    timeout_s: float,
    gate: CallGate,
    model_name: str,
    outcome: Outcome,
) -> Judgement | Attempt:
    """One request: the judgement, or how the attempt failed; its usage is added to
    `outcome` and reported to `gate`."""
    messages, settings, parameters = request
    try:
        async with asyncio.timeout(timeout_s + 1.0):
            response = await model_request(
                model, messages, model_settings=settings, model_request_parameters=parameters
            )
    except Exception as exc:
        return classify_error(exc)
    usage = response.usage
    outcome.input_tokens += usage.input_tokens
    outcome.output_tokens += usage.output_tokens
    gate.spent(model_name, usage.input_tokens, usage.output_tokens)
    return judgement_from(response)


async def judge_call(
    metric: ResolvedMetric,
    user_query: str,
    submission: str,
    *,
    factory: ModelFactory,
    policy: RetryPolicy,
    gate: CallGate,
    estimated_tokens: int,
) -> Outcome | None:
    """Judge one submission with one LLM metric, retrying transient failures.

    Returns None when the run stopped before the first attempt (nothing was spent).
    """
    assert metric.model is not None
    model = factory(metric.model)
    timeout_s = metric.timeout_seconds or policy.timeout_s
    try:
        request = judgement_request(metric, user_query, submission, timeout_s=timeout_s)
    except Exception as exc:  # a custom LLM metric's user_prompt raised: that metric fails
        return Outcome("metric_error", error=f"{type(exc).__name__}: {exc}"[:500])
    outcome = Outcome(status="provider_error")
    started = time.perf_counter()
    last: Attempt | None = None
    for attempt in range(1, metric.max_retries + 2):
        if attempt > 1:
            assert last is not None
            delay = backoff_delay(attempt - 1, policy, last.retry_after)
            outcome.delays.append(delay)
            await asyncio.sleep(delay)
        if not await gate.acquire(metric.model, estimated_tokens):
            if attempt == 1:
                return None
            break
        outcome.attempts = attempt
        found = await _attempt(model, request, timeout_s, gate, metric.model, outcome)
        if isinstance(found, Judgement):
            outcome.history.append("ok")
            outcome.status, outcome.score, outcome.comment = "ok", found.score, found.comment
            outcome.error = None
            break
        last = found
        outcome.history.append(last.status)
        outcome.status, outcome.error, outcome.stop_run = last.status, last.error, last.stop_run
        if not last.transient:
            break
    outcome.latency_ms = (time.perf_counter() - started) * 1000.0
    return outcome


async def text_reply(model: Model | str, prompt: str, *, timeout_s: float) -> str | None:
    """The text of one plain request with `prompt` (no retry: the caller decides what a
    failure means; any error of the call propagates)."""
    response = await model_request(
        model,
        [ModelRequest.user_text_prompt(prompt)],
        model_settings=ModelSettings(timeout=timeout_s),
    )
    return response.text
