"""A judge configuration resolved: each metric with every LLM parameter decided, the weights
checked, and the packages and API keys the models need (SPEC 4).

Resolution per LLM parameter: the metric's value, else `[llm_default]` (or the original
evaluator's top-level `default_model`, `max_retries`, `timeout_seconds`), else the built-in
default.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from transforms.config.base import describe_validation_error
from transforms.config.judge import (
    BUILTIN_DEFAULTS,
    DEFAULT_PASS_THRESHOLD,
    MODEL_FORMAT,
    WEIGHTS,
    JudgeFile,
    LLMDefault,
    MetricEntry,
)
from transforms.errors import (
    JudgeConfigError,
    ModelFormatError,
    WeightValidationError,
)
from transforms.judge.metrics import DEFAULT_METRICS, BaseMetric, LLMJudgeMetric, metric_class
from transforms.judge.providers import (
    parse_model,
)

__all__ = [
    "JudgeConfig",
    "ResolvedMetric",
    "judge_config",
    "resolve_settings",
]

WEIGHT_TOLERANCE = 0.001
"""How far the weights may sum from 1.0, inclusive, as in the original (0.333 x 3 is fine)."""

_SAMPLING = ("top_p", "seed", "stop_sequences")
"""Parameters recorded and keyed only when set, so that results stored before they existed
keep their parameters and cache keys."""


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
    timeout_seconds: float | None = None
    """Deadline of one attempt; None uses the run's `[retry] timeout_s`."""
    top_p: float | None = None
    seed: int | None = None
    stop_sequences: tuple[str, ...] | None = None
    output_mode: str = "auto"
    """tool, native, prompted, or auto (the model's profile decides when the call is made)."""
    pass_threshold: float = DEFAULT_PASS_THRESHOLD
    """The score at and above which the metric passes an answer (`judge --evaluate`)."""

    @property
    def parameters(self) -> dict[str, Any]:
        """The parameters recorded with each result (no credentials)."""
        recorded: dict[str, Any] = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "max_retries": self.max_retries,
            "custom_instruction": self.system_instruction is not None,
        }
        for key in _SAMPLING:
            value = getattr(self, key)
            if value is not None:
                recorded[key] = list(value) if key == "stop_sequences" else value
        if self.output_mode != "auto":
            recorded["output_mode"] = self.output_mode
        return recorded

    @property
    def instruction(self) -> str:
        """The system instruction sent (the TOML's, else the built-in one)."""
        if self.system_instruction is not None:
            return self.system_instruction
        return self.metric.instruction if isinstance(self.metric, LLMJudgeMetric) else ""


_NEW_KEYS = {"max_retries", "timeout_seconds", "custom_metrics", "endpoints"}
_NEW_LLM_KEYS = {"timeout_seconds", "output_mode", *_SAMPLING}


def _hashed(settings: JudgeFile) -> dict[str, Any]:
    """The settings as hashed: keys added after hashes were first stored are left out while
    unset, so that a file that does not use them keeps its hash."""
    data = settings.model_dump(
        mode="json", exclude={"execution", "pass_threshold", "near_duplicates"}
    )
    tables = [data["llm_default"], *(data["metrics"] or [])]
    for table in data["metrics"] or []:
        table.pop("pass_threshold", None)  # what passes is read later; no judgement differs
    for table, keys in [(data, _NEW_KEYS), *((t, _NEW_LLM_KEYS) for t in tables)]:
        for key in keys:
            if table.get(key) in (None, {}):
                table.pop(key, None)
    return data


@dataclass(frozen=True)
class JudgeConfig:
    """A loaded and resolved configuration."""

    settings: JudgeFile
    metrics: tuple[ResolvedMetric, ...]
    source: str

    @property
    def config_hash(self) -> str:
        """Hash of the file's validated content."""
        payload = json.dumps(_hashed(self.settings), sort_keys=True)
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
        raise WeightValidationError(
            f"{source}: weights are given for {', '.join(with_weight)} but not for "
            f"{', '.join(missing)}; give every metric a weight, or none for equal weights"
        )
    weights = [float(w) for w in given if w is not None]
    total = sum(weights)
    if abs(total - 1.0) > WEIGHT_TOLERANCE + 1e-12:
        listing = ", ".join(f"{n}={w:g}" for n, w in zip(names, weights, strict=True))
        raise WeightValidationError(
            f"{source}: metric weights sum to {total:g}, expected 1.0 ({listing}); adjust them "
            "to sum to 1.0 (within 0.001), or remove every weight for equal weights"
        )
    return weights


def _classes(
    settings: JudgeFile, entries: list[MetricEntry], source: str, search: Sequence[Path]
) -> list[tuple[str, type[BaseMetric]]]:
    """Each entry's result name and metric class."""
    found: list[tuple[str, type[BaseMetric]]] = []
    for number, entry in enumerate(entries):
        custom = settings.custom_metrics.get(entry.name)
        try:
            cls = metric_class(entry.name if custom is None else custom.spec, search)
        except (LookupError, ImportError) as exc:
            raise JudgeConfigError(f"{source}: metrics.{number}.name: {exc}") from None
        found.append((cls.__name__ if custom is None else entry.name, cls))
    names = [name for name, _ in found]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise JudgeConfigError(
            f"{source}: metric {', '.join(repeated)} is listed more than once; list each once "
            "(duplicate metric names)"
        )
    return found


def _one_of(source: str, key: str, top: Any, table: Any, table_key: str | None = None) -> Any:
    """The value of a key the original allowed at the top level or in [llm_default]."""
    if top is not None and table is not None:
        what = "model" if key == "default_model" else key
        raise JudgeConfigError(
            f"{source}: {key} = {top!r} and [llm_default] {table_key or key} = {table!r} both "
            f"set the default {what}; keep only one"
        )
    return table if table is not None else top


def _check_providers(settings: JudgeFile, source: str) -> None:
    """Every model names a known provider or one of the file's endpoints."""
    models = [
        ("default_model", settings.default_model),
        ("llm_default.model", settings.llm_default.model),
        *((f"metrics.{n}.model", entry.model) for n, entry in enumerate(settings.metrics or [])),
    ]
    for key, model in models:
        if model is None:
            continue
        try:
            parse_model(model, settings.endpoints)
        except ValueError as exc:
            raise ModelFormatError(f"{source}: {key}: {exc}") from None


def resolve_settings(settings: JudgeFile, source: str, search: Sequence[Path] = ()) -> JudgeConfig:
    """Validated settings resolved into metrics; `search` holds folders custom metric modules
    are imported from besides the working directory.

    Raises:
        JudgeConfigError: a metric is unknown or listed twice, or the defaults conflict.
        WeightValidationError: the weights break a rule.
        ModelFormatError: a model names a provider that is neither known nor an endpoint.
    """
    _check_providers(settings, source)
    default = settings.llm_default.model_copy(
        update={
            key: _one_of(source, key, getattr(settings, key), getattr(settings.llm_default, key))
            for key in ("max_retries", "timeout_seconds")
        }
    )
    default_model = _one_of(source, "default_model", settings.default_model, default.model, "model")
    entries = settings.metrics
    if entries is None:
        entries = [MetricEntry(name=name) for name in DEFAULT_METRICS]
    if not entries:
        raise JudgeConfigError(
            f"{source}: metrics is an empty list; list at least one metric, or remove the key "
            "to use the four built-ins"
        )
    classes = _classes(settings, entries, source, search)
    weights = _weights(entries, [name for name, _ in classes], source)
    resolved = tuple(
        _metric(entry, name, cls, weight, default, default_model, settings.pass_threshold)
        for entry, (name, cls), weight in zip(entries, classes, weights, strict=True)
    )
    return JudgeConfig(settings, resolved, source)


def _metric(
    entry: MetricEntry,
    name: str,
    cls: type[BaseMetric],
    weight: float,
    default: LLMDefault,
    default_model: str | None,
    threshold: float,
) -> ResolvedMetric:
    """One metric with each parameter from the entry, else `default`, else the built-in;
    `threshold` is the file's pass threshold, for a metric that sets none."""
    passes = threshold if entry.pass_threshold is None else entry.pass_threshold
    if not cls.uses_llm:  # LLM parameters given to a non-LLM metric are ignored
        return ResolvedMetric(name, cls(), weight, None, None, None, None, 0, pass_threshold=passes)

    def pick(key: str) -> Any:
        for value in (getattr(entry, key), getattr(default, key)):
            if value is not None:
                return value
        return BUILTIN_DEFAULTS.get(key)

    stops = pick("stop_sequences")
    return ResolvedMetric(
        name=name,
        metric=cls(),
        weight=weight,
        model=entry.model or default_model or BUILTIN_DEFAULTS["model"],
        system_instruction=entry.system_instruction,
        temperature=pick("temperature"),
        max_tokens=pick("max_tokens"),
        max_retries=int(pick("max_retries")),
        timeout_seconds=pick("timeout_seconds"),
        top_p=pick("top_p"),
        seed=pick("seed"),
        stop_sequences=None if stops is None else tuple(stops),
        output_mode=pick("output_mode") or "auto",
        pass_threshold=passes,
    )


def _error_class(error: ValidationError) -> type[JudgeConfigError]:
    """The most precise error class every problem of `error` belongs to."""
    kinds = {item["type"] for item in error.errors()}
    if kinds == {MODEL_FORMAT}:
        return ModelFormatError
    if kinds == {WEIGHTS}:
        return WeightValidationError
    return JudgeConfigError


def judge_config(data: dict[str, Any], source: str, folder: Path | None = None) -> JudgeConfig:
    """The parsed file (`source` names it in messages, `folder` holds it) validated and
    resolved.

    Raises:
        JudgeConfigError: the data breaks a rule of SPEC section 4; ModelFormatError and
            WeightValidationError when only models or only weights are at fault.
    """
    if "metric" in data and "metrics" not in data:
        raise JudgeConfigError(f"{source}: [[metric]] is not a section; write [[metrics]] (plural)")
    try:
        settings = JudgeFile.model_validate(dict(data))
    except ValidationError as exc:
        message = describe_validation_error(
            exc, source, subject="judge configuration", show_input=False
        )
        raise _error_class(exc)(message) from None
    return resolve_settings(settings, source, () if folder is None else (folder,))
