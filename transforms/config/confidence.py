"""Configuration of GRACE confidence and intervention levels (SPEC 5): TOML, validated at load.

Every key sits under `[confidence]`, so the seed's `config.confidence.thresholds` reads the same
here. Every number of the original calculator (grace/confidence.py at ceb06343, where all but
the thresholds are written into the code) is a key, its default the original's value;
docs/confidence.md shows a whole file, configs/confidence.toml carries the defaults, and
docs/configuration.md lists what replaced the keys that had no counterpart in the original.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from transforms.config.base import StrictModel as _Strict
from transforms.config.base import toml_text

__all__ = [
    "AGGREGATION_METHODS",
    "profile_toml",
    "ConfidenceConfig",
    "ConfidenceFile",
    "ConfidenceWeights",
    "CriticalCheck",
    "DerivedRules",
    "LLMConfig",
    "Penalties",
    "SearchQuality",
    "Thresholds",
]

AGGREGATION_METHODS = ("mean", "min", "weighted", "critical_check")
"""How step scores become one trace score (docs/confidence.md)."""

_Unit = Annotated[float, Field(ge=0.0, le=1.0)]
_NonNegative = Annotated[float, Field(ge=0.0)]


class SearchQuality(_Strict):
    """Search quality from the search statistics (the original's `_calc_search_quality`)."""

    max_alone_from: _NonNegative = 0.6
    """A best score at or above this is the search quality by itself."""
    max_weight: _NonNegative = 0.7
    """Below it: max_weight * best + avg_weight * mean - the variance penalty."""
    avg_weight: _NonNegative = 0.3
    """Weight of the mean score in that blend."""
    variance_weight: _NonNegative = 0.3
    """Variance penalty: min(variance_cap, variance_weight * variance)."""
    variance_cap: _NonNegative = 0.15
    """The most the variance penalty takes off."""


class ConfidenceWeights(_Strict):
    """Weights of a non-search step's weighted mean (the original's hard-coded 0.6, 0.4, 0.2,
    0.3, 0.1); a factor joins the mean only when its floor allows it (tool success always)."""

    search_quality: _NonNegative = 0.6
    """Search quality, counted when above `search_quality_floor`."""
    tool_success: Annotated[float, Field(gt=0.0)] = 0.4
    """Tool success, always counted: above 0, or a step without another factor would weigh
    nothing (and score 0)."""
    source_agreement: _NonNegative = 0.2
    """Source agreement, counted when source_count is above `source_count_floor`."""
    llm_self_eval: _NonNegative = 0.3
    """LLM self-confidence, counted when above `llm_self_eval_floor`."""
    query_coverage: _NonNegative = 0.1
    """Query coverage, counted when above `query_coverage_floor`."""


class Penalties(_Strict):
    """Multipliers of the score when their condition holds (the original's `_apply_penalties`),
    applied one after the other in this order."""

    no_search_results: _NonNegative = 0.5
    """A search step with 0 results: score x this."""
    tool_failures_base: _NonNegative = 0.8
    """tool_success_rate < 1: score x (tool_failures_base + tool_failures_per_rate * rate)."""
    tool_failures_per_rate: _NonNegative = 0.2
    """See tool_failures_base."""
    no_sources: _NonNegative = 0.7
    """source_count 0: score x this, unless exempt."""
    no_sources_exempt_from: _NonNegative = 0.8
    """A non-search step whose LLM self-confidence is at least this is exempt from no_sources
    (a search step with results always is)."""


class CriticalCheck(_Strict):
    """aggregation = "critical_check": the original's `aggregate_with_critical_check`."""

    threshold: _NonNegative = 0.3
    """A step scoring strictly below this is a critical failure."""
    multiplier: _NonNegative = 0.7
    """With a critical failure, the trace's mean x this."""


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


_JSON_KEY = r"^[A-Za-z_][A-Za-z0-9_]*$"


def _regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression ({exc}); fix the pattern") from None
    return pattern


def _keys(keys: tuple[str, ...]) -> tuple[str, ...]:
    bad = [key for key in keys if not re.match(_JSON_KEY, key)]
    if bad:
        raise ValueError(
            f"{bad} are not plain JSON keys; give top-level keys made of letters, digits and "
            'underscores (for example "error")'
        )
    return keys


class DerivedRules(_Strict):
    """`[confidence.derived]`: how derived mode reads a trace (docs/confidence.md, Derived mode).

    A tool call's result is its step's output_summary, or else the observation step that
    answers it. The result marks the call failed by its text or by the JSON object it holds.
    """

    error_pattern: str = r"(?i)^\s*(error|exception|traceback|failed|failure)\b"
    """A result whose text matches this (re.search) is a failure."""
    error_keys: tuple[str, ...] = ("error", "errors", "exception")
    """A JSON-object result with one of these top-level keys holding a value (not null, false,
    "", [] or {}) is a failure."""
    status_keys: tuple[str, ...] = ("status",)
    """Top-level keys of a JSON-object result that hold a status ..."""
    error_statuses: tuple[str, ...] = ("error", "failed", "failure")
    """... and the status values (any case) that mean a failure."""
    error_flags: tuple[str, ...] = ("isError", "is_error")
    """Top-level keys whose value true means a failure (MCP, Anthropic tool results)."""
    success_flags: tuple[str, ...] = ("success", "ok")
    """Top-level keys whose value false means a failure."""
    empty_result_pattern: str = r"(?i)^\s*(\[\s*\]|\{\s*\}|null|none)?\s*$"
    """A search whose result matches this returned nothing (no results)."""
    search_relevance: _Unit = 0.7
    """The relevance given to a search's result, which traces do not score: 0.7 scores a
    search like a step without sources, so searching alone neither lifts nor lowers a trace."""
    thought_steps: bool = True
    """Each thought (and each retry of a model call) is a plan step of its own, as the
    original's executor scores reasoning steps."""
    thought_lines_max: Annotated[int, Field(ge=1, le=1000)] = 20
    """A thought before the trace's last step is one plan step per line that holds a letter or
    a digit (what the agent stated, listed or weighed before answering), at most this many; 1:
    one plan step per thought, as before."""
    empty_answer_cap: _Unit = 0.3
    """The most confidence a trace whose final answer (outcome.result_summary) is blank gets;
    below the default `confirm` threshold, so such a trace is ESCALATE."""
    answer_support: bool = True
    """The answer step's query coverage is the share of the answer's words that the trace
    held before it (objective, calls, results, thoughts); off: no coverage, as before."""
    support_min_letters: Annotated[int, Field(ge=1, le=20)] = 4
    """A word of the answer is a run of at least this many letters (scripts written without
    spaces between words, such as Chinese and Japanese, are not counted)."""

    _patterns = field_validator("error_pattern", "empty_result_pattern")(_regex)
    _json_keys = field_validator("error_keys", "status_keys", "error_flags", "success_flags")(_keys)


class LLMConfig(_Strict):
    """The model behind LLMSelfEvaluator and QueryCoverageCalculator (optional factors)."""

    model: str | None = None
    """A pydantic-ai model name such as "openai:gpt-4o-mini"; None: no LLM factors."""
    timeout_s: Annotated[float, Field(gt=0.0)] = 30.0
    """Seconds one request may take before it counts as failed (score 0.5)."""


class ConfidenceConfig(_Strict):
    """`[confidence]`: the calculator's constants, thresholds, aggregation, derived mode, LLM."""

    search_quality: SearchQuality = Field(default_factory=SearchQuality)
    """How search statistics become search quality."""
    weights: ConfidenceWeights = Field(default_factory=ConfidenceWeights)
    """Weights of the non-search weighted mean."""
    search_quality_floor: _NonNegative = 0.0
    """Search quality joins the non-search mean only when strictly above this."""
    source_count_floor: Annotated[int, Field(ge=0)] = 1
    """Source agreement joins it only when source_count is strictly above this."""
    llm_self_eval_floor: _Unit = 0.6
    """LLM self-confidence joins it only when strictly above this."""
    query_coverage_floor: _Unit = 0.1
    """Query coverage joins it only when strictly above this."""
    penalties: Penalties = Field(default_factory=Penalties)
    """Penalty multipliers."""
    score_decimals: Annotated[int, Field(ge=0, le=3)] = 3
    """A step score is clamped to [0, 1], then rounded to this many decimals (Python's round)."""
    thresholds: Thresholds = Field(default_factory=Thresholds)
    """Intervention level thresholds."""
    aggregation: Literal["mean", "min", "weighted", "critical_check"] = "weighted"
    """How a trace's step scores combine (weighted: step k of n weighs k)."""
    critical_check: CriticalCheck = Field(default_factory=CriticalCheck)
    """The constants of aggregation = "critical_check"."""
    search_tool_pattern: str = "(?i)search|retriev|lookup|query|find"
    """Derived mode: a tool_call step whose tool name matches this regex is a search step."""
    derived: DerivedRules = Field(default_factory=DerivedRules)
    """Derived mode: how failures, empty searches and plan steps are read off a trace."""
    llm: LLMConfig = Field(default_factory=LLMConfig)
    """Optional LLM factors."""
    profile: str | None = None
    """The name of a fitted profile (`tracegrade confidence --fit` writes it): every run that
    uses the file names it. A name only: not part of the config hash."""

    _valid_regex = field_validator("search_tool_pattern")(_regex)

    @property
    def config_hash(self) -> str:
        """Hash of everything that changes a confidence result, stored with every row."""
        payload = self.model_dump(mode="json", exclude={"llm": {"timeout_s"}, "profile": True})
        encoded = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(encoded).hexdigest()[:16]


class ConfidenceFile(_Strict):
    """A whole confidence configuration file."""

    confidence: ConfidenceConfig = Field(default_factory=ConfidenceConfig)


def profile_toml(config: ConfidenceConfig, header: list[str]) -> str:
    """`config` as a confidence TOML file of its non-default keys (its profile name and
    thresholds always), under `header` comment lines."""
    data = config.model_dump(mode="json", exclude_defaults=True, exclude_none=True)
    data["profile"] = config.profile
    data["thresholds"] = config.thresholds.model_dump(mode="json")
    lines = [f"# {line}" for line in header] + [""] + toml_text("confidence", data)
    return "\n".join(lines) + "\n"
