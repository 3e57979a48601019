"""A judge configuration resolved: each metric with every LLM parameter decided, the weights
checked, and the API keys the models need (SPEC 4).

Resolution per LLM parameter: the metric's value, else `[llm_default]` (or the top-level
`default_model`), else the built-in default.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from transforms.config._base import validate_config
from transforms.config.judge import BUILTIN_DEFAULTS, JudgeSettings, MetricEntry
from transforms.errors import JudgeConfigError, MissingApiKeyError
from transforms.judge.metrics import BUILTIN_METRICS, BaseMetric, LLMJudgeMetric, metric_class
from transforms.judge.providers import KEYLESS_WITH_BASE_URL, api_key_variable

__all__ = ["JudgeConfig", "ResolvedMetric", "check_api_keys", "judge_config"]

_WEIGHT_TOLERANCE = 1e-9


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


def judge_config(data: dict[str, Any], source: str) -> JudgeConfig:
    """The parsed file (`source` names it in messages) validated and resolved.

    Raises:
        JudgeConfigError: the data breaks a rule of SPEC section 4.
    """
    if "metric" in data and "metrics" not in data:
        raise JudgeConfigError(f"{source}: [[metric]] is not a section; write [[metrics]] (plural)")
    settings = validate_config(
        data,
        JudgeSettings,
        source,
        kind="judge configuration",
        error=JudgeConfigError,
        show_input=False,
    )
    return JudgeConfig(settings, _resolve(settings, source), source)


def check_api_keys(config: JudgeConfig, environ: Mapping[str, str] | None = None) -> None:
    """Raise MissingApiKeyError naming the variable of the first model whose key is unset."""
    env = os.environ if environ is None else environ
    for model in config.models:
        provider = model.partition(":")[0]
        variable = api_key_variable(model)
        if variable is None or env.get(variable, "").strip():
            continue
        if provider in KEYLESS_WITH_BASE_URL and env.get("OPENAI_BASE_URL", "").strip():
            continue
        users = [m.name for m in config.metrics if m.model == model]
        raise MissingApiKeyError(
            f"{config.source}: model {model!r} (metrics {', '.join(users)}) needs an API key in "
            f"the environment variable {variable}, which is not set; export {variable}=... "
            "before running (keys are never read from the configuration file)",
            variable=variable,
        )
