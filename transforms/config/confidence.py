"""Configuration of GRACE confidence and intervention levels (SPEC 5): TOML, validated at load.

Every key sits under `[confidence]`, so the seed's `config.confidence.thresholds` reads the same
here. docs/confidence.md shows a whole file; configs/confidence.toml carries the defaults.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from transforms.config._base import StrictModel as _Strict

__all__ = [
    "AGGREGATION_METHODS",
    "ConfidenceConfig",
    "ConfidenceFile",
    "ConfidenceWeights",
    "LLMConfig",
    "Penalties",
    "Thresholds",
]

AGGREGATION_METHODS = ("mean", "min", "weighted")
"""How step scores become one trace score (docs/confidence.md)."""

_Unit = Annotated[float, Field(ge=0.0, le=1.0)]
_Weight = Annotated[float, Field(ge=0.0)]



class ConfidenceWeights(_Strict):
    """Weights of the non-search weighted mean; a factor joins the mean only when present."""

    search_quality: _Weight = 0.6
    """Search quality, counted when it is above 0."""
    tool_success: _Weight = 0.4
    """Tool successes / tool calls, counted when the step made tool calls."""
    source_agreement: _Weight = 0.2
    """Agreement of the sources' answers, counted when there are more than one source."""
    llm_self_eval: _Weight = 0.3
    """LLM self-evaluation, counted when above `llm_self_eval_floor`."""
    query_coverage: _Weight = 0.2
    """Query coverage, counted when present (0 leaves it out)."""


class Penalties(_Strict):
    """Amounts subtracted from the base score when their condition holds; 0 turns one off."""

    zero_search_results: _Unit = 0.3
    """The step reports a search result count of 0."""
    no_sources: _Unit = 0.2
    """The step reports a source count of 0."""
    tool_failure: _Unit = 0.1
    """At least one of the step's tool calls failed."""


class Thresholds(_Strict):
    """Lowest scores of each level; strictly descending: silent > notify > confirm."""

    silent: _Unit = 0.9
    """score >= silent: proceed on its own (SILENT)."""
    notify: _Unit = 0.7
    """score >= notify: proceed and show status (NOTIFY)."""
    confirm: _Unit = 0.4
    """score >= confirm: ask before proceeding (CONFIRM); below it: ESCALATE."""

    @model_validator(mode="after")
    def _descending(self) -> Thresholds:
        if not self.silent > self.notify > self.confirm:
            raise ValueError(
                f"thresholds must be strictly descending, silent > notify > confirm; received "
                f"silent={self.silent}, notify={self.notify}, confirm={self.confirm}; reorder "
                "them (the defaults are 0.9, 0.7, 0.4)"
            )
        return self


class LLMConfig(_Strict):
    """The model behind LLMSelfEvaluator and QueryCoverageCalculator (optional factors)."""

    model: str | None = None
    """A pydantic-ai model name such as "openai:gpt-4o-mini"; None: no LLM factors."""
    timeout_s: Annotated[float, Field(gt=0.0)] = 30.0
    """Seconds one request may take before it counts as failed (score 0.5)."""


class ConfidenceConfig(_Strict):
    """`[confidence]`: factors, weights, penalties, thresholds and aggregation."""

    weights: ConfidenceWeights = Field(default_factory=ConfidenceWeights)
    """Weights of the non-search weighted mean."""
    llm_self_eval_floor: _Unit = 0.6
    """LLM self-evaluation joins the mean only when strictly above this."""
    expected_results: Annotated[int, Field(ge=1)] = 1
    """Search results at which the volume part of search quality reaches 1."""
    penalties: Penalties = Field(default_factory=Penalties)
    """Named penalties."""
    thresholds: Thresholds = Field(default_factory=Thresholds)
    """Intervention level thresholds."""
    aggregation: Literal["mean", "min", "weighted"] = "weighted"
    """How a trace's step scores combine (weighted: step k of n weighs k)."""
    search_tool_pattern: str = "(?i)search|retriev|lookup|query|find"
    """Derived mode: a tool_call step whose tool name matches this regex is a search step."""
    llm: LLMConfig = Field(default_factory=LLMConfig)
    """Optional LLM factors."""

    @field_validator("search_tool_pattern")
    @classmethod
    def _valid_regex(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression ({exc}); fix the pattern") from None
        return pattern

    def config_hash(self) -> str:
        """Hash of everything that changes a confidence result, stored with every row."""
        payload = self.model_dump(mode="json", exclude={"llm": {"timeout_s"}})
        encoded = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(encoded).hexdigest()[:16]


class ConfidenceFile(_Strict):
    """A whole confidence configuration file."""

    confidence: ConfidenceConfig = Field(default_factory=ConfidenceConfig)
