"""`configs/evaluator.toml`: the tables of the judge's configuration, validated before any call
(SPEC 4). `transforms.judge.resolve` turns them into metrics with every parameter decided;
docs/judge.md shows a whole file.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from transforms.config.base import StrictModel as _Strict
from transforms.config.endpoints import ENDPOINT_NAME, Endpoint, OutputMode
from transforms.judge.agreement import DEFAULT_PASS_THRESHOLD
from transforms.judge.metrics import DEFAULT_METRICS
from transforms.judge.providers import PROVIDERS, model_parts

__all__ = [
    "BUILTIN_DEFAULTS",
    "DEFAULT_PASS_THRESHOLD",
    "MODEL_FORMAT",
    "WEIGHTS",
    "JudgeFile",
    "LLMDefault",
    "MetricEntry",
    "RateLimit",
    "RetryPolicy",
]

BUILTIN_DEFAULTS: dict[str, Any] = {
    "model": "anthropic:claude-sonnet-4-5-20250929",
    "temperature": 0.0,
    "max_tokens": None,
    "max_retries": 3,
}
"""The built-in defaults of seed FR-019."""

_Threshold = Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)]

MODEL_FORMAT = "model_format"
"""The validation error type of a model that is not "provider:model-name"."""
WEIGHTS = "weights"
"""The validation error type of a weight that breaks a rule."""


def _model_form(value: str | None) -> str | None:
    # The form only: whether the provider is known depends on [endpoints], checked on resolving.
    if value is not None:
        try:
            model_parts(value)
        except ValueError as exc:
            raise PydanticCustomError(MODEL_FORMAT, "{message}", {"message": str(exc)}) from None
    return value


def _retries(value: int | None) -> int | None:
    if value is not None and value < 0:
        raise ValueError(f"max_retries {value} is negative; use 0 (no retry) or more")
    return value


def _timeout(value: float | None) -> float | None:
    if value is not None and not (value > 0 and math.isfinite(value)):
        raise ValueError(
            f"timeout_seconds {value} is not positive; use a number of seconds > 0, e.g. 120"
        )
    return value


_Retries = Annotated[int | None, AfterValidator(_retries)]
"""Retries after the first attempt: none or >= 0."""
_Timeout = Annotated[float | None, AfterValidator(_timeout)]
"""Seconds an attempt may take: none or > 0 and finite."""


class _LLMParams(_Strict):
    model: str | None = None
    """The judge model as "provider:model-name"."""
    temperature: float | None = None
    """Sampling temperature, 0.0 to 2.0."""
    max_tokens: int | None = None
    """Most output tokens per call, > 0; unset leaves the provider's default."""
    max_retries: _Retries = None
    """Retries of a transient failure after the first attempt, >= 0."""
    timeout_seconds: _Timeout = None
    """Deadline of one attempt, > 0; unset uses `[retry] timeout_s`."""
    top_p: float | None = None
    """Nucleus sampling, 0.0 to 1.0; unset leaves the provider's default."""
    seed: int | None = None
    """Sampling seed, for providers that take one."""
    stop_sequences: list[str] | None = None
    """Texts that end the answer when the model writes them."""
    output_mode: OutputMode | None = None
    """How the judgement is asked for: `tool` (the model calls an output tool), `native` (a
    JSON-schema response format), `prompted` (JSON asked for in the instructions and read from
    the text), or `auto` (unset: what the model's profile says it supports)."""

    _check_model = field_validator("model")(_model_form)

    @field_validator("temperature")
    @classmethod
    def _temperature(cls, value: float | None) -> float | None:
        if value is not None and (value < 0 or not math.isfinite(value)):
            raise ValueError(f"temperature {value} is negative; use a value >= 0.0, e.g. 0.0")
        if value is not None and value > 2.0:
            raise ValueError(
                f"temperature {value} is above 2.0; providers take 0.0 to 2.0, e.g. 0.0"
            )
        return value

    @field_validator("max_tokens")
    @classmethod
    def _max_tokens(cls, value: int | None) -> int | None:
        if value is not None and value <= 0:
            raise ValueError(
                f"max_tokens {value} is not positive; use a whole number > 0, e.g. 1024, "
                "or remove it to use the provider's default"
            )
        return value

    @field_validator("top_p")
    @classmethod
    def _top_p(cls, value: float | None) -> float | None:
        if value is not None and not 0.0 <= value <= 1.0:
            raise ValueError(f"top_p {value} is outside 0.0 to 1.0; use e.g. 0.9")
        return value


class LLMDefault(_LLMParams):
    """`[llm_default]`: LLM parameters every metric falls back to."""


class MetricEntry(_LLMParams):
    """One `[[metrics]]` element."""

    name: str
    """Class name (ClarityCoherence), snake_case alias (clarity_coherence), "module:Class", or
    a name of `[custom_metrics]`; surrounding spaces are ignored."""
    weight: float | None = None
    """Weight in the overall score; all metrics have one, or none (equal weights)."""
    system_instruction: str | None = None
    """Replaces the metric's built-in prompt entirely."""
    pass_threshold: _Threshold | None = None
    """The score (0 to 100) at and above which this metric passes an answer (`judge
    --evaluate`); else the top-level `pass_threshold`. Never part of the config hash."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the metric name is empty; write a metric's name, e.g. 'Coverage'")
        return value.strip()

    @field_validator("weight")
    @classmethod
    def _weight(cls, value: float | None) -> float | None:
        if value is not None and (value < 0 or not math.isfinite(value)):
            raise PydanticCustomError(
                WEIGHTS, "{message}", {"message": f"weight {value} is negative; use a weight >= 0"}
            )
        return value


class CustomMetricRef(_Strict):
    """A `[custom_metrics]` entry of the original evaluator: `name = { module = "pkg.mod",
    class = "ClassName" }`, so that `[[metrics]] name = "name"` uses that class."""

    module: str
    """The module, importable from the working directory or the configuration's folder."""
    class_name: str = Field(alias="class")
    """The metric class in that module."""

    @property
    def spec(self) -> str:
        """The class as "module:Class"."""
        return f"{self.module}:{self.class_name}"


class RateLimit(_Strict):
    """A per-provider limit shared by every call of a run."""

    requests_per_minute: Annotated[float, Field(gt=0)] | None = None
    """Most requests started per minute."""
    tokens_per_minute: Annotated[float, Field(gt=0)] | None = None
    """Most tokens (estimated input + output) per minute."""


class RetryPolicy(_Strict):
    """The one retry layer: exponential backoff with jitter, for transient errors only."""

    base_delay_s: Annotated[float, Field(ge=0)] = 1.0
    """Delay before the first retry; doubles at each further retry."""
    max_delay_s: Annotated[float, Field(ge=0)] = 60.0
    """Longest delay between two attempts (a longer Retry-After is still honoured)."""
    jitter: Annotated[float, Field(ge=0, le=1)] = 0.5
    """Random fraction added to or removed from each delay."""
    timeout_s: Annotated[float, Field(gt=0)] = 120.0
    """Deadline of one attempt; a call that exceeds it is a timeout (transient)."""
    circuit_breaker: Annotated[int, Field(ge=1)] = 20
    """Consecutive failed judgements (after retries) that stop the run."""


class Price(_Strict):
    """USD per million tokens of one model."""

    input_per_mtok: Annotated[float, Field(ge=0)]
    """Price of a million input tokens."""
    output_per_mtok: Annotated[float, Field(ge=0)]
    """Price of a million output tokens."""
    batch_discount: Annotated[float, Field(ge=0, le=1)] = 0.5
    """Fraction of the price paid in batch mode."""


class JudgeInputs(_Strict):
    """Which stored trace columns feed the judge."""

    user_query: str = "objective"
    """Column of the traces table holding the user query (task.objective)."""
    submission: str = "result_summary"
    """Column holding the submission (outcome.result_summary)."""


class NearDuplicates(_Strict):
    """`[near_duplicates]`: answers to the same objective that say nearly the same thing are
    judged once, the judgement shared (docs/judge.md, "Near-duplicate answers")."""

    distance: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] | None = None
    """Cosine distance (1 - cosine similarity) of two answers' embeddings at or below which
    the later answer (by id) shares the earlier one's judgements; none shares nothing."""


class JudgeExecution(_Strict):
    """`[execution]`: where a live run's calls are made (docs/judge.md, "Fanning out")."""

    engine: Literal["local", "dask"] = "local"
    """`local` makes every call in the flow's process; `dask` splits the submissions that need
    calls into `shards` and judges each shard as a task on a Dask cluster (prefect-dask)."""
    dask_address: Annotated[str, Field(min_length=1)] | None = None
    """Scheduler of an existing Dask cluster ("tcp://host:8786"); none starts a local one."""
    workers: int = 2
    """Worker processes of the local cluster (ignored with `dask_address`)."""
    shards: int | None = None
    """Shards the submissions are split into; unset means one per worker. Each shard gets
    1/shards of the rate limits, of max_concurrency and of --budget."""

    @field_validator("workers", "shards")
    @classmethod
    def _positive(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError(f"{value} is not a whole number >= 1; use 1 or more, e.g. 2")
        return value

    @model_validator(mode="after")
    def _address_needs_dask(self) -> JudgeExecution:
        if self.dask_address is not None and self.engine != "dask":
            raise ValueError(
                f"dask_address = {self.dask_address!r} is set but engine = {self.engine!r}; "
                "set engine = 'dask' or remove dask_address"
            )
        return self

    @property
    def shard_count(self) -> int:
        """`shards`, else `workers`."""
        return self.shards if self.shards is not None else self.workers


_IGNORED_TOP_LEVEL = ("temperature", "max_tokens", "top_p", "seed", "stop_sequences")
"""LLM parameters the original evaluator silently ignored at the top level."""


class JudgeFile(_Strict):
    """The whole file."""

    default_model: str | None = None
    """Default judge model (seed FR-016); the same as `[llm_default] model`."""
    max_retries: _Retries = None
    """The original evaluator's top-level form of `[llm_default] max_retries`."""
    timeout_seconds: _Timeout = None
    """The original evaluator's top-level form of `[llm_default] timeout_seconds`."""
    llm_default: LLMDefault = LLMDefault()
    """Fallback LLM parameters."""
    metrics: list[MetricEntry] | None = None
    """The metrics; absent means the four built-ins with equal weights."""
    custom_metrics: dict[str, CustomMetricRef] = Field(default_factory=dict)
    """The original evaluator's custom metric table: names usable in `[[metrics]]`."""
    mode: Literal["live", "batch"] = "live"
    """live: direct requests; batch: the provider batch API (docs/judge.md)."""
    max_concurrency: Annotated[int, Field(ge=1)] = 8
    """Submissions judged at once."""
    rate_limits: dict[str, RateLimit] = Field(default_factory=dict)
    """Limits by provider name, e.g. [rate_limits.openai]."""
    retry: RetryPolicy = RetryPolicy()
    """Backoff, attempt timeout and circuit breaker."""
    prices: dict[str, Price] = Field(default_factory=dict)
    """Prices by model ("provider:model-name"), for --dry-run and --budget."""
    estimated_output_tokens: Annotated[int, Field(gt=0)] = 200
    """Output tokens assumed per call for cost estimates (capped by max_tokens)."""
    inputs: JudgeInputs = JudgeInputs()
    """Trace columns judged."""
    execution: JudgeExecution = JudgeExecution()
    """Local calls, or shards on a Dask cluster; never part of the config hash (where calls
    run changes no judgement)."""
    endpoints: dict[str, Endpoint] = Field(default_factory=dict)
    """OpenAI-compatible servers by name: `[endpoints.local]` makes `local:model` a model."""
    near_duplicates: NearDuplicates = NearDuplicates()
    """Near-duplicate answers judged once (live mode, local engine); not hashed: no judgement
    differs, a shared row says from which answer it came."""
    pass_threshold: _Threshold = DEFAULT_PASS_THRESHOLD
    """The score at and above which the overall score, and any metric without its own, passes
    an answer (`judge --evaluate`); a judgement does not depend on it (not hashed)."""

    _check_default_model = field_validator("default_model")(_model_form)

    @model_validator(mode="before")
    @classmethod
    def _llm_keys_at_top_level(cls, data: Any) -> Any:
        misplaced = [key for key in _IGNORED_TOP_LEVEL if isinstance(data, dict) and key in data]
        if misplaced:
            raise ValueError(
                f"{', '.join(misplaced)} at the top level is not read (the original evaluator "
                "ignored it too); move it into [llm_default], before any [[metrics]]"
            )
        return data

    @field_validator("endpoints")
    @classmethod
    def _endpoint_names(cls, value: dict[str, Endpoint]) -> dict[str, Endpoint]:
        for name in value:
            if name in PROVIDERS:
                raise ValueError(
                    f"[endpoints.{name}] has the name of the provider {name!r}; call the "
                    "endpoint otherwise, e.g. [endpoints.local], and its models local:NAME"
                )
            if not ENDPOINT_NAME.fullmatch(name):
                raise ValueError(
                    f"[endpoints.{name}]: an endpoint's name is written before the colon of "
                    "its models; use lower-case letters, digits, - and _, e.g. local"
                )
        return value

    @model_validator(mode="after")
    def _dask_is_live(self) -> JudgeFile:
        if self.execution.engine == "dask" and self.mode == "batch":
            raise ValueError(
                "[execution] engine = 'dask' fans out live calls, but mode = 'batch' hands the "
                "requests to the provider's batch API; set engine = 'local' for batch mode"
            )
        return self

    @property
    def enabled_metrics(self) -> list[str]:
        """The metric names in order, as written (the four built-ins when none are listed)."""
        if self.metrics is None:
            return list(DEFAULT_METRICS)
        return [entry.name for entry in self.metrics]

    @property
    def metric_weights(self) -> dict[str, float | None]:
        """Weight by metric name as written, equal weights when none is given (the seed's
        `metric_weights`); resolving the configuration checks them."""
        names = self.enabled_metrics
        given = [None] * len(names) if self.metrics is None else [m.weight for m in self.metrics]
        if all(weight is None for weight in given):
            return dict.fromkeys(names, 1.0 / len(names)) if names else {}
        return dict(zip(names, given, strict=True))
