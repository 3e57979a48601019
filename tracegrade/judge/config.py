"""`configs/evaluator.toml`: the judge's configuration, validated before any call (SPEC 4).

Resolution per LLM parameter: the metric's value, else `[llm_default]` (or the top-level
`default_model`), else the built-in default. docs/judge.md shows a whole file.
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tracegrade._validation import describe_validation_error
from tracegrade.judge.errors import JudgeConfigError
from tracegrade.judge.keys import api_key_variable, check_api_keys, parse_model
from tracegrade.judge.metrics import BUILTIN_METRICS, BaseMetric, LLMJudgeMetric, metric_class

__all__ = [
    "BUILTIN_DEFAULTS",
    "JudgeConfig",
    "JudgeExecution",
    "JudgeSettings",
    "LLMDefault",
    "MetricEntry",
    "Price",
    "RateLimit",
    "ResolvedMetric",
    "RetryPolicy",
    "api_key_variable",
    "check_api_keys",
    "load_judge_config",
    "parse_model",
]

BUILTIN_DEFAULTS: dict[str, Any] = {
    "model": "anthropic:claude-sonnet-4-5-20250929",
    "temperature": 0.0,
    "max_tokens": None,
    "max_retries": 3,
}
"""The built-in defaults of seed FR-019."""

_WEIGHT_TOLERANCE = 1e-9


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _LLMParams(_Strict):
    model: str | None = None
    """The judge model as "provider:model-name"."""
    temperature: float | None = None
    """Sampling temperature, >= 0."""
    max_tokens: int | None = None
    """Most output tokens per call, > 0; unset leaves the provider's default."""
    max_retries: int | None = None
    """Retries of a transient failure after the first attempt, >= 0."""

    @field_validator("model")
    @classmethod
    def _model_form(cls, value: str | None) -> str | None:
        if value is not None:
            parse_model(value)
        return value

    @field_validator("temperature")
    @classmethod
    def _temperature(cls, value: float | None) -> float | None:
        if value is not None and (value < 0 or not math.isfinite(value)):
            raise ValueError(f"temperature {value} is negative; use a value >= 0.0, e.g. 0.0")
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

    @field_validator("max_retries")
    @classmethod
    def _max_retries(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise ValueError(f"max_retries {value} is negative; use 0 (no retry) or more")
        return value


class LLMDefault(_LLMParams):
    """`[llm_default]`: LLM parameters every metric falls back to."""


class MetricEntry(_LLMParams):
    """One `[[metrics]]` element."""

    name: str
    """Class name (ClarityCoherence), snake_case alias (clarity_coherence) or "module:Class"."""
    weight: float | None = None
    """Weight in the overall score; all metrics have one, or none (equal weights)."""
    system_instruction: str | None = None
    """Replaces the metric's built-in prompt entirely."""

    @field_validator("weight")
    @classmethod
    def _weight(cls, value: float | None) -> float | None:
        if value is not None and (value < 0 or not math.isfinite(value)):
            raise ValueError(f"weight {value} is negative; use a weight >= 0")
        return value


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


class JudgeSettings(_Strict):
    """The whole file."""

    default_model: str | None = None
    """Default judge model (seed FR-016); the same as `[llm_default] model`."""
    llm_default: LLMDefault = LLMDefault()
    """Fallback LLM parameters."""
    metrics: list[MetricEntry] | None = None
    """The metrics; absent means the four built-ins with equal weights."""
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

    @model_validator(mode="after")
    def _dask_is_live(self) -> JudgeSettings:
        if self.execution.engine == "dask" and self.mode == "batch":
            raise ValueError(
                "[execution] engine = 'dask' fans out live calls, but mode = 'batch' hands the "
                "requests to the provider's batch API; set engine = 'local' for batch mode"
            )
        return self

    @field_validator("default_model")
    @classmethod
    def _default_model(cls, value: str | None) -> str | None:
        if value is not None:
            parse_model(value)
        return value


@dataclass(frozen=True)
class ResolvedMetric:
    """A metric with every parameter resolved: what one judgement depends on."""

    name: str
    metric: BaseMetric
    weight: float
    model: str | None
    system_instruction: str | None
    temperature: float | None
    max_tokens: int | None
    max_retries: int

    @property
    def parameters(self) -> dict[str, Any]:
        """The parameters recorded with each result (no credentials)."""
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "max_retries": self.max_retries,
            "custom_instruction": self.system_instruction is not None,
        }

    @property
    def instruction(self) -> str:
        """The system instruction sent (the TOML's, else the built-in one)."""
        if self.system_instruction is not None:
            return self.system_instruction
        return self.metric.instruction if isinstance(self.metric, LLMJudgeMetric) else ""


@dataclass(frozen=True)
class JudgeConfig:
    """A loaded and resolved configuration."""

    settings: JudgeSettings
    metrics: tuple[ResolvedMetric, ...]
    source: str

    @property
    def config_hash(self) -> str:
        """Hash of the file's validated content."""
        payload = json.dumps(
            self.settings.model_dump(mode="json", exclude={"execution"}), sort_keys=True
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    @property
    def models(self) -> list[str]:
        """The distinct judge models, in metric order."""
        return list(dict.fromkeys(m.model for m in self.metrics if m.model is not None))


def _weights(entries: list[MetricEntry], names: list[str], source: str) -> list[float]:
    given = [entry.weight for entry in entries]
    if all(weight is None for weight in given):
        return [1.0 / len(entries)] * len(entries)
    missing = [name for name, weight in zip(names, given, strict=True) if weight is None]
    if missing:
        with_weight = [name for name, w in zip(names, given, strict=True) if w is not None]
        raise JudgeConfigError(
            f"{source}: weights are given for {', '.join(with_weight)} but not for "
            f"{', '.join(missing)}; give every metric a weight, or none for equal weights"
        )
    weights = [float(w) for w in given if w is not None]
    total = sum(weights)
    if abs(total - 1.0) > _WEIGHT_TOLERANCE:
        listing = ", ".join(f"{n}={w:g}" for n, w in zip(names, weights, strict=True))
        raise JudgeConfigError(
            f"{source}: metric weights sum to {total:g}, expected 1.0 ({listing}); adjust them "
            "to sum to 1.0, or remove every weight for equal weights"
        )
    return weights


def _resolve(settings: JudgeSettings, source: str) -> tuple[ResolvedMetric, ...]:
    if settings.default_model is not None and settings.llm_default.model is not None:
        raise JudgeConfigError(
            f"{source}: default_model = {settings.default_model!r} and [llm_default] model = "
            f"{settings.llm_default.model!r} both set the default model; keep only one"
        )
    entries = settings.metrics
    if entries is None:
        entries = [MetricEntry(name=name) for name in BUILTIN_METRICS]
    if not entries:
        raise JudgeConfigError(
            f"{source}: metrics is an empty list; list at least one metric, or remove the key "
            "to use the four built-ins"
        )
    classes: list[type[BaseMetric]] = []
    for number, entry in enumerate(entries):
        try:
            classes.append(metric_class(entry.name))
        except (LookupError, ImportError) as exc:
            raise JudgeConfigError(f"{source}: metrics.{number}.name: {exc}") from None
    names = [cls.__name__ for cls in classes]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise JudgeConfigError(
            f"{source}: metric {', '.join(repeated)} is listed more than once; list each once"
        )
    weights = _weights(entries, names, source)
    default = settings.llm_default
    default_model = settings.default_model or default.model or BUILTIN_DEFAULTS["model"]
    resolved = []
    for entry, cls, weight in zip(entries, classes, weights, strict=True):
        metric = cls()

        def pick(key: str, entry: MetricEntry = entry) -> Any:
            for value in (getattr(entry, key), getattr(default, key)):
                if value is not None:
                    return value
            return BUILTIN_DEFAULTS[key]

        llm = cls.uses_llm
        resolved.append(
            ResolvedMetric(
                name=cls.__name__,
                metric=metric,
                weight=weight,
                model=(entry.model or default_model) if llm else None,
                system_instruction=entry.system_instruction if llm else None,
                temperature=pick("temperature") if llm else None,
                max_tokens=pick("max_tokens") if llm else None,
                max_retries=int(pick("max_retries")) if llm else 0,
            )
        )
    return tuple(resolved)


def load_judge_config(
    path: str | Path | None,
    *,
    check_keys: bool = True,
    environ: Mapping[str, str] | None = None,
) -> JudgeConfig:
    """Load, validate and resolve a judge configuration; None gives the built-in defaults.

    Raises:
        JudgeConfigError: the file is missing, not TOML, or breaks a rule of SPEC section 4.
        MissingApiKeyError: `check_keys` and a model's API key is not in the environment.
    """
    source = "(built-in defaults)" if path is None else str(path)
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise JudgeConfigError(f"judge configuration file {path} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise JudgeConfigError(f"{path} is not valid TOML: {exc}") from None
    if "metric" in data and "metrics" not in data:
        raise JudgeConfigError(f"{source}: [[metric]] is not a section; write [[metrics]] (plural)")
    try:
        settings = JudgeSettings.model_validate(data)
    except ValidationError as exc:
        raise JudgeConfigError(
            describe_validation_error(exc, source, subject="judge configuration", show_input=False)
        ) from None
    config = JudgeConfig(settings, _resolve(settings, source), source)
    if check_keys:
        check_api_keys(config, environ)
    return config
