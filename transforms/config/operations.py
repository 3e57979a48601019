"""Scorer sets of the block-edit operation scorers: TOML configuration and the seed's presets.

A scorer set lists scorers with a weight and a threshold each; a case passes when every scorer
meets its threshold. Built-in scorers are named by `type`; custom ones by `class`
("module:Class", constructed with `options` as keyword arguments). The presets `standard`,
`strict` and `operation-focused` are the seed's three combinations; `all` runs the five
built-in scorers at their seed thresholds. docs/operations.md shows a whole file.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from transforms.config.base import import_object
from transforms.errors import ConfigError
from transforms.operations.custom import CaseScorer
from transforms.operations.scorers import BUILTIN_SCORERS, builtin_scorer
from transforms.operations.scoring import ScorerSet, ScorerSpec

__all__ = ["PRESETS", "OperationsConfig", "OperationsFile", "scorer_set"]

DEFAULT_SET = "standard"
"""The set used when neither the command nor the file names one."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ScorerEntry(_Strict):
    """One scorer of a set."""

    type: str | None = None
    """A built-in scorer: operation-accuracy, target-block-precision, content-quality,
    operation-result or anti-hallucination."""
    class_: str | None = Field(default=None, alias="class")
    """A custom scorer as "module:Class"; the class has score(actual, expected) and
    details(actual, expected)."""
    name: Annotated[str, Field(min_length=1)] | None = None
    """The name the scorer's rows carry; defaults to `type`, required with `class`."""
    weight: Annotated[float, Field(ge=0.0)] = 1.0
    """Weight in the case's weighted average."""
    threshold: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    """The lowest passing score; defaults to the built-in scorer's seed threshold, required
    with `class`."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of a custom class (e.g. max_acceptable_ms)."""

    @model_validator(mode="after")
    def _one_kind(self) -> ScorerEntry:
        if (self.type is None) == (self.class_ is None):
            raise ValueError("give either type (a built-in scorer) or class (a custom one)")
        if self.type is not None:
            if self.type not in BUILTIN_SCORERS:
                raise ValueError(
                    f"type {self.type!r} is not a built-in scorer; use one of "
                    f"{', '.join(BUILTIN_SCORERS)}, or class for a custom scorer"
                )
            if self.options:
                raise ValueError("options apply to custom scorers only; remove them")
            return self
        if ":" not in (self.class_ or "") or self.class_.startswith(":"):  # type: ignore[union-attr]
            raise ValueError(f"class {self.class_!r} must read 'module:Class'")
        if self.name is None or self.threshold is None:
            raise ValueError(f"custom scorer {self.class_!r} needs a name and a threshold")
        return self

    @property
    def scorer_name(self) -> str:
        """The name its rows carry."""
        return self.name or self.type or ""

    @property
    def effective_threshold(self) -> float:
        """The threshold, or the built-in scorer's seed threshold."""
        if self.threshold is not None:
            return self.threshold
        return builtin_scorer(self.type or "").default_threshold


class ScorerSetConfig(_Strict):
    """`[sets.NAME]`: the scorers applied together."""

    scorers: Annotated[list[ScorerEntry], Field(min_length=1)]
    """The scorers, in report order."""

    @model_validator(mode="after")
    def _names_and_weights(self) -> ScorerSetConfig:
        names = [entry.scorer_name for entry in self.scorers]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(
                f"scorer names {', '.join(repeated)} appear more than once; give each a "
                "distinct name"
            )
        total = sum(entry.weight for entry in self.scorers)
        if total <= 0:
            raise ValueError(f"weights sum to {total}; give at least one scorer a positive weight")
        return self


def _builtin(type_: str, weight: float, threshold: float) -> ScorerEntry:
    return ScorerEntry(type=type_, weight=weight, threshold=threshold)


PRESETS: dict[str, ScorerSetConfig] = {
    "standard": ScorerSetConfig(
        scorers=[
            _builtin("operation-accuracy", 1.0, 0.8),
            _builtin("target-block-precision", 1.0, 0.75),
            _builtin("content-quality", 1.0, 0.6),
        ]
    ),
    "strict": ScorerSetConfig(
        scorers=[
            _builtin("operation-accuracy", 1.0, 0.9),
            _builtin("target-block-precision", 1.0, 0.9),
            _builtin("content-quality", 1.0, 0.8),
            _builtin("anti-hallucination", 2.0, 1.0),
        ]
    ),
    "operation-focused": ScorerSetConfig(
        scorers=[
            _builtin("operation-accuracy", 2.0, 0.9),
            _builtin("target-block-precision", 1.5, 0.85),
            _builtin("content-quality", 0.5, 0.5),
        ]
    ),
    "all": ScorerSetConfig(
        scorers=[
            _builtin(name, 1.0, scorer.default_threshold)
            for name, scorer in BUILTIN_SCORERS.items()
        ]
    ),
}
"""The built-in sets: the seed's three patterns, and all five scorers at seed thresholds."""


class OperationsFile(_Strict):
    """A scorer-set file (configs/scorers.toml)."""

    default_set: Annotated[str, Field(min_length=1)] = DEFAULT_SET
    """The set used when the command names none."""
    sets: dict[str, ScorerSetConfig] = Field(default_factory=dict)
    """Sets defined in addition to the presets."""

    @model_validator(mode="after")
    def _known_sets(self) -> OperationsFile:
        clashes = sorted(set(self.sets) & set(PRESETS))
        if clashes:
            raise ValueError(
                f"sets {', '.join(clashes)} are built-in presets; give your sets other names"
            )
        if self.default_set not in self.all_sets():
            raise ValueError(
                f"default_set {self.default_set!r} is not a set; use one of "
                f"{', '.join(self.all_sets())}"
            )
        return self

    def all_sets(self) -> dict[str, ScorerSetConfig]:
        """Presets and the file's sets."""
        return {**PRESETS, **self.sets}


@dataclass(frozen=True)
class OperationsConfig:
    """A resolved scorer set: the scorers ready to run, and what to record about them."""

    name: str
    scorer_set: ScorerSet
    entries: list[dict[str, Any]]

    @property
    def config_hash(self) -> str:
        """Hash of the set's name and entries, recorded with every scored row."""
        payload = json.dumps([self.name, self.entries], sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _custom(entry: ScorerEntry, where: str, search: list[Path]) -> CaseScorer:
    try:
        cls = import_object(entry.class_ or "", search)
    except ImportError as exc:
        raise ConfigError(f"{where}: class {exc}") from None
    try:
        scorer = cls(**entry.options)
    except Exception as exc:
        raise ConfigError(
            f"{where}: {entry.class_}({', '.join(f'{k}={v!r}' for k, v in entry.options.items())})"
            f" failed: {type(exc).__name__}: {exc}; fix its options"
        ) from None
    if not isinstance(scorer, CaseScorer):
        raise ConfigError(
            f"{where}: {entry.class_} has no score(actual, expected) and "
            "details(actual, expected) methods; implement both"
        )
    return scorer


def scorer_set(
    settings: OperationsFile, name: str | None, config_file: Path | None
) -> OperationsConfig:
    """The scorer set `name` (else the file's default_set) from the presets and the file.

    Custom classes are imported (from the working directory or the folder of `config_file`)
    and constructed here, so a bad class fails before any work.

    Raises:
        ConfigError: the file is invalid, the set does not exist, or a class cannot be built.
    """
    chosen = name or settings.default_set
    sets = settings.all_sets()
    if chosen not in sets:
        raise ConfigError(
            f"scorer set {chosen!r} does not exist; use one of {', '.join(sets)}"
            + ("" if config_file else " (or pass a scorer configuration file that defines it)")
        )
    search = [config_file.resolve().parent] if config_file else []
    specs, entries = [], []
    for number, entry in enumerate(sets[chosen].scorers):
        where = f"set {chosen!r}, scorer {number} ({entry.scorer_name})"
        scorer = (
            builtin_scorer(entry.type) if entry.type is not None else _custom(entry, where, search)
        )
        specs.append(ScorerSpec(entry.scorer_name, scorer, entry.weight, entry.effective_threshold))
        entries.append(
            {
                "name": entry.scorer_name,
                "type": entry.type,
                "class": entry.class_,
                "options": entry.options,
                "weight": entry.weight,
                "threshold": entry.effective_threshold,
            }
        )
    return OperationsConfig(chosen, ScorerSet(chosen, tuple(specs)), entries)
