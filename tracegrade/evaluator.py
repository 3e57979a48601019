"""The seed's evaluator (MixSeek, seed 004) in memory: one query and submission in, every
metric's score and the weighted overall score out (FR-005, FR-011, FR-012).

It shares the batch judge's metrics, prompts, configuration loader and model calls (the live
run's per-submission path), so both give the same scores for the same texts. docs/judge.md
("Python API") has a runnable example.

    from tracegrade.evaluator import Evaluator, EvaluationRequest

    evaluator = Evaluator("configs/evaluator.toml")
    result = evaluator.evaluate(EvaluationRequest(user_query="...", submission="..."))
"""

from __future__ import annotations

from pathlib import Path

from pydantic_ai.models import Model

from pipelines.errors import CustomMetricError, MetricFailedError, ModelCallError
from pipelines.judge.calls import ModelFactory
from pipelines.judge.control import RunControl
from pipelines.judge.in_memory import evaluate_submission, run_sync
from pipelines.judge.models import judge_model_factory
from storage.config_files import load_judge_config
from transforms.config.judge import JudgeFile, LLMDefault, MetricEntry
from transforms.errors import (
    JudgeConfigError,
    MissingApiKeyError,
    ModelFormatError,
    ProviderPackageError,
    TracegradeError,
    WeightValidationError,
)
from transforms.judge.environment import check_environment
from transforms.judge.evaluator_models import EvaluationRequest, EvaluationResult, MetricScore
from transforms.judge.metrics import BaseMetric, LLMJudgeMetric
from transforms.judge.resolve import JudgeConfig, ResolvedMetric, resolve_settings

__all__ = [
    "BaseMetric",
    "CustomMetricError",
    "EvaluationConfig",
    "EvaluationRequest",
    "EvaluationResult",
    "Evaluator",
    "EvaluatorAPIError",
    "EvaluatorConfigError",
    "JudgeConfigError",
    "LLMDefaultConfig",
    "LLMJudgeMetric",
    "MetricConfig",
    "MetricFailedError",
    "MetricScore",
    "MissingApiKeyError",
    "ModelCallError",
    "ModelFormatError",
    "ProviderPackageError",
    "TracegradeError",
    "WeightValidationError",
]

EvaluationConfig = JudgeFile
"""The seed's EvaluationConfig: the contents of configs/evaluator.toml, e.g.
`EvaluationConfig.model_validate(tomllib.loads(text))`."""
LLMDefaultConfig = LLMDefault
"""The seed's LLMDefaultConfig: the `[llm_default]` table."""
MetricConfig = MetricEntry
"""The seed's MetricConfig: one `[[metrics]]` element."""
EvaluatorConfigError = JudgeConfigError
"""The original evaluator's name of the configuration error."""
EvaluatorAPIError = ModelCallError
"""The original evaluator's name of the model call error."""


class Evaluator:
    """Evaluates one request at a time with the configured metrics, in order.

    The configuration is validated, and each model's provider package and API key checked,
    when the Evaluator is made (FR-009, FR-018); nothing is called until `evaluate`.

    Args:
        config: a configuration file (evaluator.toml), an EvaluationConfig, or None for the
            four built-in metrics at equal weights.
        model: a pydantic-ai model answering for every LLM metric (FunctionModel or TestModel
            in tests); the configured model names are then only recorded, and no provider
            package or key is checked.
        model_factory: builds the model for each configured "provider:model-name" instead of
            pydantic-ai's `infer_model`; no provider package or key is checked either.

    Raises:
        JudgeConfigError: the configuration breaks a rule (WeightValidationError and
            ModelFormatError for weights and models).
        ProviderPackageError: a provider's client package is not installed.
        MissingApiKeyError: a model's API key is not in the environment.
    """

    def __init__(
        self,
        config: str | Path | JudgeFile | None = None,
        *,
        model: Model | None = None,
        model_factory: ModelFactory | None = None,
    ) -> None:
        if model is not None and model_factory is not None:
            raise ValueError("give model or model_factory, not both")
        self._overridden = model is not None or model_factory is not None
        self._judge = self._resolved(config)
        if model is not None:
            self._factory: ModelFactory = lambda name: model
        else:
            self._factory = model_factory or judge_model_factory(self._judge.settings.endpoints)
        self._gate = RunControl(self._judge, None, batch=False)

    def _resolved(self, config: str | Path | JudgeFile | None) -> JudgeConfig:
        if isinstance(config, JudgeFile):
            resolved = resolve_settings(config, "EvaluationConfig")
        else:
            resolved = load_judge_config(config, check_keys=False)
        if not self._overridden:
            check_environment(resolved)
        return resolved

    @property
    def config(self) -> JudgeFile:
        """The configuration as validated (the seed's EvaluationConfig)."""
        return self._judge.settings

    @property
    def metrics(self) -> tuple[ResolvedMetric, ...]:
        """The metrics in order, each with its weight, model and parameters resolved."""
        return self._judge.metrics

    async def aevaluate(self, request: EvaluationRequest) -> EvaluationResult:
        """`evaluate`, awaited on the caller's event loop.

        Raises:
            ModelCallError: an LLM metric gave no judgement after its retries.
            CustomMetricError: a metric that needs no model failed.
            JudgeConfigError: `request.config` breaks a rule (checked like the Evaluator's).
        """
        judge, gate, factory = self._judge, self._gate, self._factory
        if request.config is not None:
            judge = self._resolved(request.config)
            gate = RunControl(judge, None, batch=False)
            if not self._overridden:
                factory = judge_model_factory(judge.settings.endpoints)
        return await evaluate_submission(
            judge, request.user_query, request.submission, factory=factory, gate=gate
        )

    def evaluate(self, request: EvaluationRequest) -> EvaluationResult:
        """Every metric's score for the request, in order, and the weighted overall score.

        Synchronous (the seed's `model_request_sync`); the calls run on one background event
        loop, so this also works where an event loop is already running.

        Raises:
            ModelCallError: an LLM metric gave no judgement after its retries (FR-010); the
                metrics after it are not called.
            CustomMetricError: a metric that needs no model raised or returned no score.
            JudgeConfigError: `request.config` breaks a rule.
        """
        return run_sync(self.aevaluate(request))
