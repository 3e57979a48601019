"""One judgement: the request, the structured answer, typed statuses and the one retry layer.

This is the only place tracegrade reaches an LLM. Retries are ours alone: pydantic-ai's and the
provider SDK's are switched off (`max_retries=0` on every request), so an attempt is one HTTP
request and `attempts` counts what the provider saw.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
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
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.output import OutputObjectDefinition
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition

from pipelines.judge.models import (
    EndpointChatModel,
    ModelFactory,
    default_model_factory,
    effective_output_mode,
)
from transforms.config.judge import RetryPolicy
from transforms.judge.metrics import JSON_INSTRUCTION, JUDGEMENT_TOOL, Judgement, LLMJudgeMetric
from transforms.judge.replies import json_object_in
from transforms.judge.resolve import ResolvedMetric

__all__ = [
    "FAILED_STATUSES",
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

_JITTER = random.Random()
"""Retry jitter from a generator of its own: drawing from the global one would change the
random state of whatever else runs in the process (a caller's seeded simulation, a test)."""

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

_OUTPUT_TOOL = ToolDefinition(
    name=JUDGEMENT_TOOL,
    description="Record the score (0-100) and the comment of this judgement.",
    parameters_json_schema=Judgement.model_json_schema(),
)
_OUTPUT_OBJECT = OutputObjectDefinition(
    json_schema=Judgement.model_json_schema(),
    name=JUDGEMENT_TOOL,
    description="The score (0-100) and the comment of this judgement.",
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
    output_mode: str = ""
    """The output mode the requests used (tool, native or prompted)."""
    largest_reply: int = 0
    """The most output tokens of one attempt's reply."""


class CallGate(Protocol):
    """What the run lets a call do: wait for the rate limit, and learn that the run stopped."""

    async def acquire(self, model: str, tokens: int) -> bool:
        """Wait for capacity; False when the run has stopped and the call must not start."""
        ...

    def spent(self, model: str, input_tokens: int, output_tokens: int) -> None:
        """Record the usage of one attempt."""
        ...


def _parameters(mode: str) -> ModelRequestParameters:
    """The output part of a request: the judgement tool, or the judgement's JSON schema as a
    response format (`native`) or in the instructions (`prompted`, pydantic-ai's template)."""
    if mode == "tool":
        return ModelRequestParameters(
            output_mode="tool", output_tools=[_OUTPUT_TOOL], allow_text_output=False
        )
    return ModelRequestParameters(
        output_mode="native" if mode == "native" else "prompted",
        output_object=_OUTPUT_OBJECT,
        prompted_output_template=False,  # JSON_INSTRUCTION asks for the object instead
        allow_text_output=True,
    )


def judgement_request(
    metric: ResolvedMetric,
    user_query: str,
    submission: str,
    *,
    timeout_s: float | None,
    mode: str = "tool",
    native_format: str = "json_schema",
) -> tuple[list[ModelRequest], ModelSettings, ModelRequestParameters]:
    """Messages, settings and output parameters of one judgement request in output `mode`;
    the metric's own `timeout_seconds` replaces `timeout_s` (the run's attempt deadline).
    `native_format` "json_object" sends the schema as `{"type": "json_object", "schema": ...}`
    (llama-cpp-python's server) instead of OpenAI's `json_schema`."""
    assert isinstance(metric.metric, LLMJudgeMetric)
    prompt = metric.metric.request_prompt(user_query, submission, mode)
    instructions = metric.instruction
    if mode != "tool":
        instructions = f"{instructions}\n\n{JSON_INSTRUCTION}".strip()
    messages = [ModelRequest.user_text_prompt(prompt, instructions=instructions)]
    settings = ModelSettings(max_retries=0)
    for key in ("temperature", "max_tokens", "top_p", "seed"):
        if getattr(metric, key) is not None:
            settings[key] = getattr(metric, key)  # type: ignore[literal-required]
    if metric.stop_sequences is not None:
        settings["stop_sequences"] = list(metric.stop_sequences)
    if metric.timeout_seconds is not None and timeout_s is not None:
        timeout_s = metric.timeout_seconds
    if timeout_s is not None:
        settings["timeout"] = timeout_s
        settings["request_timeout"] = timeout_s
    if mode == "native" and native_format == "json_object":
        schema = _OUTPUT_OBJECT.json_schema
        settings["extra_body"] = {"response_format": {"type": "json_object", "schema": schema}}
    return messages, settings, _parameters(mode)


def _text_judgement(response: ModelResponse) -> Judgement | Attempt:
    """The judgement written as JSON in a text reply (native and prompted modes)."""
    text = " ".join(p.content for p in response.parts if isinstance(p, TextPart)).strip()
    found = json_object_in(text)
    if found is None:
        cut = " (cut at max_tokens)" if response.finish_reason == "length" else ""
        return Attempt("parse_error", f"the reply holds no JSON object{cut}: {text[:200]!r}", True)
    # Keys a small model adds of its own (an echo of the query, a title) are not the judgement.
    return _validated({key: found[key] for key in ("score", "comment") if key in found})


def _validated(args: Any) -> Judgement | Attempt:
    try:
        return Judgement.model_validate(args)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'judgement'}={e.get('input')!r}: {e['msg']}"
            for e in exc.errors()
        )
        return Attempt("parse_error", f"judgement out of range or malformed: {problems}", True)


def judgement_from(response: ModelResponse, mode: str = "tool") -> Judgement | Attempt:
    """The judgement in a response to a request in output `mode`, or the reason there is
    none."""
    if response.finish_reason == "content_filter":
        return Attempt("refusal", "the provider's content filter stopped the answer", False)
    calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
    calls = [p for p in calls if p.tool_name == JUDGEMENT_TOOL] or calls
    if mode != "tool" and not calls:
        return _text_judgement(response)
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
    return _validated(args)


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
    delay *= 1 + _JITTER.uniform(-policy.jitter, policy.jitter)
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
    """One request, never longer than `timeout_s`: the judgement, or how the attempt failed;
    its usage is added to `outcome` and reported to `gate`."""
    messages, settings, parameters = request
    try:
        async with asyncio.timeout(timeout_s):
            response = await model_request(
                model, messages, model_settings=settings, model_request_parameters=parameters
            )
    except Exception as exc:
        return classify_error(exc)
    usage = response.usage
    outcome.input_tokens += usage.input_tokens
    outcome.output_tokens += usage.output_tokens
    outcome.largest_reply = max(outcome.largest_reply, usage.output_tokens)
    gate.spent(model_name, usage.input_tokens, usage.output_tokens)
    return judgement_from(response, outcome.output_mode)


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
    mode = effective_output_mode(metric.output_mode, model)
    native = model.native_format if isinstance(model, EndpointChatModel) else "json_schema"
    try:
        request = judgement_request(
            metric, user_query, submission, timeout_s=timeout_s, mode=mode, native_format=native
        )
    except Exception as exc:  # a custom LLM metric's user_prompt raised: that metric fails
        return Outcome("metric_error", error=f"{type(exc).__name__}: {exc}"[:500])
    outcome = Outcome(status="provider_error", output_mode=mode)
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
