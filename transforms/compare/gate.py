"""The regression gate: `--fail-on 'score < -0.02, judge.Relevance < -5, level.ESCALATE > 0.03'`.

A line names a metric, a comparison (`<`, `<=`, `>`, `>=`) and a limit on the difference
(candidate less baseline). It fires when the difference is beyond the limit AND its 95%
interval excludes zero: a difference the data cannot tell from none never fails a build.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from transforms.compare.stats import Difference
from transforms.errors import ConfigError

__all__ = ["Verdict", "parse_gate", "verdicts"]

_LINE = re.compile(
    r"^\s*([A-Za-z_][\w.\-]*)\s*(<=|>=|<|>)\s*([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?)\s*$"
)
_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@dataclass(frozen=True)
class GateLine:
    """One line of the gate: `metric op limit`."""

    metric: str
    op: str
    limit: float

    @property
    def text(self) -> str:
        """The line as it is written."""
        return f"{self.metric} {self.op} {self.limit:g}"


@dataclass(frozen=True)
class Verdict:
    """One gate line against its metric's difference."""

    line: GateLine
    difference: Difference | None
    fired: bool

    @property
    def text(self) -> str:
        """One line: FAIL or pass, the line, the difference and its interval."""
        found = self.difference
        if found is None or not math.isfinite(found.diff):
            return f"skip  {self.line.text}: no values to compare"
        word = "FAIL" if self.fired else "pass"
        why = (
            "beyond the line, interval excludes 0"
            if self.fired
            else "interval includes 0"
            if not found.excludes_zero
            else "within the line"
        )
        return (
            f"{word}  {self.line.text}: difference {found.diff:+.4g} "
            f"(95% interval {found.low:+.4g} to {found.high:+.4g}; {why})"
        )


def parse_gate(text: str, known: Sequence[str]) -> list[GateLine]:
    """The lines of `--fail-on` (comma-separated); each metric must be one of `known`.

    Raises:
        ConfigError: a line that is not `metric op number`, or a metric not in `known`.
    """
    lines = []
    for part in (piece for piece in text.split(",") if piece.strip()):
        found = _LINE.match(part)
        if found is None:
            raise ConfigError(
                f"--fail-on line {part.strip()!r} is not 'METRIC OP NUMBER' "
                "(OP one of <, <=, >, >=; e.g. 'score < -0.02')"
            )
        metric = found.group(1)
        if metric not in known:
            raise ConfigError(
                f"--fail-on names {metric!r}, which this comparison does not have; "
                f"it has {', '.join(known)}"
            )
        lines.append(GateLine(metric, found.group(2), float(found.group(3))))
    if not lines:
        raise ConfigError("--fail-on holds no line; give e.g. 'score < -0.02'")
    return lines


def verdicts(lines: Sequence[GateLine], differences: Sequence[Difference]) -> list[Verdict]:
    """Each gate line's verdict over the differences of the whole comparison."""
    by_metric = {d.metric: d for d in differences}
    found = []
    for line in lines:
        difference = by_metric.get(line.metric)
        fired = (
            difference is not None
            and math.isfinite(difference.diff)
            and _OPERATORS[line.op](difference.diff, line.limit)
            and difference.excludes_zero
        )
        found.append(Verdict(line, difference, fired))
    return found
