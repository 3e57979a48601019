"""A comparison in words: the Markdown `tracegrade compare` prints, and its `--json`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from transforms.compare.gate import Verdict
from transforms.compare.stats import RESAMPLES, SEED, Difference
from transforms.words import NONE

__all__ = [
    "GroupComparison",
    "Shown",
    "comparison_json",
    "comparison_markdown",
    "gate_text",
    "verdict_line",
]

HEADLINE = ("score", "success", "confidence", "level.ESCALATE")
"""The metrics the breakdown tables show (with those the gate names); `--json` has them all."""


class Shown(NamedTuple):
    """What a comparison prints: the selections, their traces, how they were compared, the
    differences, the gate's verdicts (None without a gate) and the groups."""

    selections: tuple[str, str]
    traces: tuple[int, int]
    pairing: str
    differences: Sequence[Difference]
    verdicts: Sequence[Verdict] | None
    groups: Sequence[GroupComparison] = ()


class GroupComparison(NamedTuple):
    """One domain or agent (or the pool of the small ones) compared."""

    column: str
    value: str
    traces: tuple[int, int]
    differences: list[Difference]


def _number(value: float, signed: bool = False) -> str:
    if not math.isfinite(value):
        return NONE if math.isnan(value) else ("+inf" if value > 0 else "-inf")
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _p(value: float) -> str:
    if not math.isfinite(value):
        return NONE
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"


def verdict_line(verdicts: Sequence[Verdict]) -> str:
    """One line: the gate's verdict over all its lines."""
    fired = [v for v in verdicts if v.fired]
    if fired:
        names = ", ".join(v.line.text for v in fired)
        return f"verdict: REGRESSION ({len(fired)} of {len(verdicts)} lines: {names})"
    return (
        f"verdict: no regression ({len(verdicts)} line{'' if len(verdicts) == 1 else 's'} checked)"
    )


def gate_text(verdicts: Sequence[Verdict]) -> str:
    """The gate's lines, then its verdict in one line."""
    return "\n".join([*(verdict.text for verdict in verdicts), "", verdict_line(verdicts)]) + "\n"


def _short(d: Difference) -> str:
    interval = (
        f" ({_number(d.low, True)} to {_number(d.high, True)})" if math.isfinite(d.low) else ""
    )
    return f"{_number(d.diff, True)}{interval}{' *' if d.excludes_zero else ''}"


def _breakdowns(groups: Sequence[GroupComparison], shown: Sequence[str]) -> list[str]:
    """A table per breakdown column: each group's traces, how it was compared, and the
    difference of each metric in `shown` with its interval (* where it excludes 0)."""
    lines: list[str] = []
    for column in dict.fromkeys(g.column for g in groups):
        lines += [
            "",
            f"## By {column}",
            "",
            "Each group compared on its own; * the 95% interval excludes 0; p-values "
            "Holm-corrected over every group and metric of the table are in --json.",
            "",
            "| "
            + column
            + " | traces (baseline) | traces (candidate) | compared as | "
            + " | ".join(shown)
            + " |",
            "|---" * (4 + len(shown)) + "|",
        ]
        for group in (g for g in groups if g.column == column):
            found = {d.metric: d for d in group.differences}
            paired = [d for d in group.differences if d.paired]
            how = f"paired, {paired[0].baseline_n:,} tasks" if paired else "two samples"
            cells = [
                _short(found[m])
                if m in found and found[m].baseline_n and found[m].candidate_n
                else NONE
                for m in shown
            ]
            lines.append(
                f"| {group.value} | {group.traces[0]:,} | {group.traces[1]:,} | {how} | "
                + " | ".join(cells)
                + " |"
            )
    return lines


def comparison_markdown(shown: Shown) -> str:
    """The comparison as Markdown: who was compared, how, every metric, the gate."""
    selections, traces, pairing, differences, verdicts, groups = shown
    tested = sum(1 for d in differences if math.isfinite(d.p_value))
    paired = any(d.paired for d in differences)
    lines = [
        "# tracegrade compare",
        "",
        f"baseline: {selections[0]} ({traces[0]:,} traces); "
        f"candidate: {selections[1]} ({traces[1]:,} traces)",
        f"compared as {pairing}",
        f"differences are candidate less baseline; n counts "
        f"{'tasks (each side its mean over the task)' if paired else 'traces'}; 95% percentile "
        f"bootstrap intervals ({RESAMPLES:,} resamples, seed {SEED}); p-values Holm-corrected "
        f"over {tested} metrics",
        "",
        "| metric | n (baseline) | n (candidate) | baseline | candidate | difference "
        "| 95% interval | effect size | p (Holm) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for d in differences:
        if d.baseline_n == 0 or d.candidate_n == 0:
            continue  # nothing to compare (said below when one side has values)
        interval = (
            f"{_number(d.low, True)} to {_number(d.high, True)}" if math.isfinite(d.low) else NONE
        )
        lines.append(
            f"| {d.metric} | {d.baseline_n:,} | {d.candidate_n:,} | {_number(d.baseline_mean)} "
            f"| {_number(d.candidate_mean)} | {_number(d.diff, True)} | {interval} "
            f"| {_number(d.effect, True)} | {_p(d.p_holm)} |"
        )
    one_sided = [d.metric for d in differences if (d.baseline_n == 0) != (d.candidate_n == 0)]
    if one_sided:
        lines += [
            "",
            f"Not compared, values on one side only: {', '.join(one_sided)} "
            "(labels or judge results that only one selection has).",
        ]
    gated = [v.line.metric for v in verdicts or ()]
    lines += _breakdowns(groups, list(dict.fromkeys([*HEADLINE, *gated])))
    if verdicts is not None:
        return "\n".join([*lines, "", "## Gate (the whole selections)", "", gate_text(verdicts)])
    return "\n".join(lines) + "\n"


def _value(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _metric_json(d: Difference) -> dict[str, Any]:
    return {
        "metric": d.metric,
        "baseline_n": d.baseline_n,
        "candidate_n": d.candidate_n,
        "baseline_mean": _value(d.baseline_mean),
        "candidate_mean": _value(d.candidate_mean),
        "difference": _value(d.diff),
        "low": _value(d.low),
        "high": _value(d.high),
        "effect_size": _value(d.effect),
        "p_value": _value(d.p_value),
        "p_holm": _value(d.p_holm),
    }


def comparison_json(shown: Shown) -> dict[str, Any]:
    """The comparison as one JSON object (`--json`)."""
    selections, traces, pairing, differences, verdicts, groups = shown
    return {
        "baseline": {"selection": selections[0], "traces": traces[0]},
        "candidate": {"selection": selections[1], "traces": traces[1]},
        "pairing": pairing,
        "paired": any(d.paired for d in differences),
        "bootstrap": {"resamples": RESAMPLES, "seed": SEED, "interval": 0.95},
        "metrics": [_metric_json(d) for d in differences],
        "groups": [
            {
                "column": g.column,
                "value": g.value,
                "baseline_traces": g.traces[0],
                "candidate_traces": g.traces[1],
                "paired": any(d.paired for d in g.differences),
                "metrics": [_metric_json(d) for d in g.differences],
            }
            for g in groups
        ],
        "gate": None
        if verdicts is None
        else [{"line": v.line.text, "fired": v.fired, "text": v.text} for v in verdicts],
        "regression": bool(verdicts) and any(v.fired for v in verdicts or ()),
    }
