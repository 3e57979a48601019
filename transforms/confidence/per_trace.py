"""Derived mode one trace at a time, through the object API: the oracle of the batch path.

Tests and bench/bench_confidence.py compare transforms.confidence.derived + batch against it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from transforms.confidence.calculator import (
    ConfidenceAggregator,
    ConfidenceCalculator,
    critical_note,
    level_reason,
)
from transforms.confidence.derived import (
    HELD_TEXT_FIELDS,
    SOURCE_AGREEMENT,
    WORD_GAPLESS_RANGES,
)
from transforms.confidence.levels import cap_note
from transforms.confidence.model import ConfidenceFactors, ConfidenceScore, InterventionLevel
from transforms.config.confidence import ConfidenceConfig, DerivedRules

__all__ = ["reference_is_error", "reference_statement_lines", "reference_trace_confidence"]


@dataclass(frozen=True)
class TraceConfidence:
    """One trace's result: step scores, aggregate, level, reason, action."""

    steps: list[ConfidenceScore]
    aggregate: float
    level: InterventionLevel
    reason: str
    recommended_action: str


def _json_text(value: Any) -> str | None:
    """A JSON value as Polars' json_path_match gives it: strings bare, others as JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def reference_is_error(result: str | None, rules: DerivedRules) -> bool:
    """transforms.confidence.derived.result_is_error for one result."""
    if result is None:
        return False
    if re.search(rules.error_pattern, result):
        return True
    try:
        parsed = json.loads(result)
    except ValueError:
        return False
    if not isinstance(parsed, dict):
        return False
    fields = {key: _json_text(value) for key, value in parsed.items()}
    statuses = {status.lower() for status in rules.error_statuses}
    present = {key: text for key, text in fields.items() if text is not None}
    return (
        any(present[k].strip() not in _EMPTY for k in rules.error_keys if k in present)
        or any(present[k].lower() in statuses for k in rules.status_keys if k in present)
        or any(fields.get(k) == "true" for k in rules.error_flags)
        or any(fields.get(k) == "false" for k in rules.success_flags)
    )


_EMPTY = {"", "null", "false", "[]", "{}"}


def _results(steps: Sequence[Mapping[str, Any]]) -> dict[int, str | None]:
    """Each tool call's result: its output_summary, else the observation answering it."""
    calls = [i for i, s in enumerate(steps) if _is_call(s)]
    awaiting = [i for i in calls if steps[i].get("output_summary") is None]
    observed = [i for i, s in enumerate(steps) if s["type"] == "observation"]
    results: dict[int, str | None] = {i: steps[i].get("output_summary") for i in calls}
    for call, observation in zip(awaiting, observed, strict=False):
        if observation > call:
            results[call] = steps[observation].get("content")
    return results


def _is_call(step: Mapping[str, Any]) -> bool:
    kind = step["type"]
    return kind == "tool_call" or (kind == "error_recovery" and step.get("tool_name") is not None)


def _search(results: int, relevance: float) -> dict[str, Any]:
    """`results` results of the given relevance (the original tool's statistics of such scores)."""
    found = results > 0
    return {
        "search_result_count": results,
        "search_avg_score": relevance if found else 0.0,
        "search_max_score": relevance if found else 0.0,
        "search_score_variance": 0.0 if found else 1.0,
    }


def _is_word_letter(char: str) -> bool:
    code = ord(char)
    return char.isalpha() and not any(lo <= code <= hi for lo, hi in WORD_GAPLESS_RANGES)


def _answer_words(text: str, min_letters: int) -> set[str]:
    words, run = set(), []
    for char in [*text.lower(), " "]:
        if _is_word_letter(char):
            run.append(char)
            continue
        if len(run) >= min_letters:
            words.add("".join(run))
        run = []
    return words


def reference_answer_coverage(
    steps: Sequence[Mapping[str, Any]],
    answer: str | None,
    objective: str | None,
    config: ConfidenceConfig,
) -> float:
    """The answer step's query coverage (transforms.confidence.derived._answer_coverage);
    the original's default 0.0 (not weighed) when there is nothing to measure."""
    rules = config.derived
    words = (
        _answer_words(answer or "", rules.support_min_letters) if rules.answer_support else set()
    )
    if not words:
        return 0.0
    before = steps[:-1] if steps and steps[-1]["type"] == "thought" else steps
    texts = [step.get(field) for step in before for field in HELD_TEXT_FIELDS]
    held = "\n".join(t for t in [objective, *texts] if t is not None).lower()
    share = sum(word in held for word in words) / len(words)
    return max(share, math.nextafter(config.query_coverage_floor, math.inf))


def reference_statement_lines(text: str | None, most: int) -> int:
    """The plan steps of a thought before the last step: its lines that hold a letter or a
    decimal digit, at least one, at most `most` (derived.STATEMENT_LINE)."""
    lines = (text or "").split("\n")
    stated = sum(any(c.isalpha() or c.isdecimal() for c in line) for line in lines)
    return min(max(stated, 1), most)


def derived_step_factors(
    steps: Sequence[Mapping[str, Any]],
    config: ConfidenceConfig,
    answer: str | None = None,
    objective: str | None = None,
) -> list[ConfidenceFactors]:
    """The plan steps derived mode reads off one trace (failed or repeated calls, thoughts,
    then the answer, whose coverage reads the final `answer` against the `objective` and the
    steps)."""
    rules = config.derived
    results = _results(steps)
    out = []
    calls = successes = 0
    seen: set[tuple[Any, Any]] = set()
    for index, step in enumerate(steps):
        if index in results:
            following = steps[index + 1]["type"] if index + 1 < len(steps) else None
            result = results[index]
            ok = 0 if following == "error_recovery" or reference_is_error(result, rules) else 1
            name = step.get("tool_name")
            search = name is not None and re.search(config.search_tool_pattern, name) is not None
            empty = result is not None and re.search(rules.empty_result_pattern, result) is not None
            found = int(search and ok == 1 and not empty)
            calls += 1
            successes += ok
            call = (name, step.get("input"))
            repeat = call in seen
            seen.add(call)
            if ok == 1 and not repeat:
                continue
            out.append(
                ConfidenceFactors(
                    **_search(found, rules.search_relevance),
                    source_agreement=SOURCE_AGREEMENT,
                    tool_success_rate=float(ok),
                    tool_execution_count=1,
                    tool_success_count=ok,
                    is_search_step=search,
                )
            )
        elif rules.thought_steps and step["type"] in ("thought", "error_recovery"):
            last = index == len(steps) - 1
            count = (
                1
                if step["type"] != "thought" or last
                else reference_statement_lines(step.get("content"), rules.thought_lines_max)
            )
            out.extend(ConfidenceFactors(source_agreement=SOURCE_AGREEMENT) for _ in range(count))
    final = ConfidenceFactors(
        source_agreement=SOURCE_AGREEMENT,
        source_count=successes,
        tool_success_rate=successes / calls if calls > 0 else 1.0,
        tool_execution_count=calls,
        tool_success_count=successes,
        query_coverage=reference_answer_coverage(steps, answer, objective, config),
    )
    return [*out, final]


def reference_trace_confidence(
    steps: Sequence[Mapping[str, Any]],
    confidence: float | None,
    config: ConfidenceConfig,
    answer: str | None = None,
    objective: str | None = None,
) -> TraceConfidence:
    """Derived mode for one trace: factors, step scores, aggregate (capped by the trace's
    outcome `confidence`, and by `empty_answer_cap` when the final `answer` is blank) and
    decision."""
    if answer is not None and not answer.strip():
        cap = config.derived.empty_answer_cap
        confidence = cap if confidence is None else min(confidence, cap)
    calculator = ConfidenceCalculator(config)
    aggregator = ConfidenceAggregator(config)
    factors = derived_step_factors(steps, config, answer, objective)
    scores = [calculator.calculate(f) for f in factors]
    aggregate = aggregator.aggregate(scores)
    capped = confidence is not None and confidence < aggregate
    if capped:
        aggregate = float(confidence)  # type: ignore[arg-type]
    critical = (
        config.aggregation == "critical_check"
        and (aggregator.aggregate_with_critical_check(scores)[1])
    )
    penalties = sorted({name for score in scores for name in score.penalties_applied})
    decision = calculator.decide_action(ConfidenceScore(aggregate, {}, tuple(penalties)))
    note = critical_note(config) if critical else ""
    note += cap_note(aggregate) if capped else ""
    reason = level_reason(decision.level, config.thresholds, penalties, note)
    return TraceConfidence(scores, aggregate, decision.level, reason, decision.recommended_action)
