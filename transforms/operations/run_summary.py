"""The report of an operation scoring run: counts, scorer summary, failing cases by reason.

The failing cases are grouped as the seed's debugging flow reads them: for each scorer below
its threshold, what its details say went wrong (mismatch reasons, wrong targets, content
issues, operations that did not apply, the additions, deletions and changes that count as
hallucination), with example cases; then the input errors.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import polars as pl

from transforms.config.operations import OperationsConfig

__all__ = ["OperationsReport", "build_operations_report", "case_blocks"]

EXAMPLES = 5
"""Example cases listed per reason."""

_COUNT_LABELS = {
    "files_read": "case files read",
    "rows_read": "cases read",
    "files_quarantined": "case files quarantined (unreadable)",
    "rows_quarantined": "lines or cases quarantined",
    "rows_scored": "cases scored in this run",
    "rows_unchanged": "cases unchanged since an earlier run with this set (kept)",
}

_ADVICE = {
    "operation-accuracy": "check unmatchedOperations: is it the type, the target or the position?",
    "target-block-precision": "check incorrectTargets: why did the model miss the block?",
    "content-quality": "check contentIssues: is a pattern too strict, is the regex valid?",
    "operation-result": "check failedOperations, then the content score",
    "anti-hallucination": "check the diff between input and output: what was added or removed?",
}


@dataclass
class OperationsReport:
    """What a run scored, as numbers and as Markdown."""

    run_id: str
    scorer_set: str
    counts: dict[str, int]
    cases: int
    passed: int
    failed: int
    input_errors: int
    markdown: str

    @property
    def nothing_scored(self) -> bool:
        """True when the input held no case at all."""
        return self.cases == 0


def _cell(value: Any, width: int = 110) -> str:
    text = str(value).replace("\n", "\\n").replace("|", "\\|")
    return text if len(text) <= width else text[: width - 1] + "…"


def _table(header: list[str], rows: Iterable[Iterable[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(value) for value in row) + " |" for row in rows]
    return lines if len(lines) > 2 else ["(none)"]


def _mean(values: pl.Series) -> float:
    found = values.mean()
    return float(found) if isinstance(found, int | float) else float("nan")


def _examples(ids: Iterable[str]) -> str:
    unique = list(dict.fromkeys(ids))
    more = f" (+{len(unique) - EXAMPLES})" if len(unique) > EXAMPLES else ""
    return ", ".join(unique[:EXAMPLES]) + more


def _by_reason(
    failing: list[tuple[str, dict[str, Any]]], items: Callable[[dict[str, Any]], Iterable[str]]
) -> list[list[Any]]:
    """Rows (reason, items, cases, examples) over the details of the failing cases."""
    counted: Counter[str] = Counter()
    cases: dict[str, list[str]] = defaultdict(list)
    for case_id, details in failing:
        for reason in items(details):
            counted[reason] += 1
            cases[reason].append(case_id)
    return [
        [reason, total, len(set(cases[reason])), _examples(cases[reason])]
        for reason, total in counted.most_common()
    ]


def case_blocks(cases: pl.DataFrame) -> dict[str, frozenset[str]]:
    """The block ids of each case's original document (`case_id`, `original_blocks` rows)."""
    ids = cases["original_blocks"].list.eval(pl.element().struct.field("id")).to_list()
    return {
        case: frozenset(found or ())  # a case with input errors may have no document
        for case, found in zip(cases["case_id"], ids, strict=True)
    }


def _target(value: dict[str, Any] | None, blocks: frozenset[str] | None) -> str:
    if value is None:
        return "(none)"
    block, index = value["targetBlockId"], value["targetIndex"]
    if block is None:
        return f"index {index}"
    if blocks is not None and block not in blocks:
        block = f"{block} (unknown block)"
    return block if index is None else f"{block} (index {index})"


def _first(header: list[str], rows: list[list[Any]], limit: int, scorer: str) -> list[str]:
    """The first `limit` rows as a table, and how many it leaves out and where they are."""
    lines = _table(header, rows[:limit])
    if len(rows) > limit:
        lines.append(
            f"... and {len(rows) - limit:,} more (their details: SELECT case_id, details FROM "
            f"latest_operation_scores WHERE scorer = '{scorer}' AND NOT passed)"
        )
    return lines


def _section(
    kind: str | None,
    scorer: str,
    failing: list[tuple[str, dict[str, Any]]],
    blocks: dict[str, frozenset[str]],
) -> list[str]:
    reason_header = ["reason", "items", "cases", "examples"]
    if kind == "operation-accuracy":
        return _table(
            reason_header,
            _by_reason(failing, lambda d: (u["reason"] for u in d["unmatchedOperations"])),
        )
    if kind == "target-block-precision":
        rows = [
            [case_id, _target(t["expected"], known), _target(t["actual"], known)]
            for case_id, d in failing
            for known in [blocks.get(case_id)]
            for t in d["incorrectTargets"]
        ]
        return _first(["case", "expected target", "actual target"], rows, EXAMPLES * 2, scorer)
    if kind == "content-quality":
        rows = [[case_id, issue] for case_id, d in failing for issue in d["contentIssues"]]
        return _first(["case", "issue"], rows, EXAMPLES * 2, scorer)
    if kind == "operation-result":
        return _table(
            reason_header,
            _by_reason(failing, lambda d: (f["reason"] for f in d["failedOperations"])),
        )
    if kind == "anti-hallucination":

        def violations(d: dict[str, Any]) -> Iterable[str]:
            yield from (f"new block ({b['reason']})" for b in d["newBlocks"])
            yield from ("unexpected deletion" for _ in d["unexpectedDeletions"])
            yield from ("unspecified change" for _ in d["unspecifiedChanges"])

        return _table(reason_header, _by_reason(failing, violations))
    rows = [[case_id, json.dumps(d, ensure_ascii=False)] for case_id, d in failing]
    return _first(["case", "details"], rows, EXAMPLES, scorer)


def _count_lines(
    counts: dict[str, int], cases: pl.DataFrame, passed: int, errors: int
) -> list[str]:
    """The counts table, then the pass rate and mean weighted average."""
    total = cases.height
    lines = _table(
        ["count", "value"],
        [[label, f"{counts[key]:,}"] for key, label in _COUNT_LABELS.items() if key in counts]
        + [
            ["cases passed", f"{passed:,}"],
            ["cases failed", f"{total - passed:,}"],
            ["cases with input errors (failed)", f"{errors:,}"],
        ],
    )
    rate = f"{passed / total:.1%}" if total else "n/a"
    mean = f"{_mean(cases['weighted_average']):.4f}" if total else "n/a"
    return [*lines, "", f"Pass rate: {rate}; mean weighted average: {mean}"]


def _scorer_lines(config: OperationsConfig, scores: pl.DataFrame) -> list[str]:
    """The scorer summary table: weight, threshold, mean score, passed and failed per scorer."""
    summary = []
    for entry in config.entries:
        rows = scores.filter(pl.col("scorer") == entry["name"])
        summary.append(
            [
                entry["name"],
                entry["weight"],
                entry["threshold"],
                f"{_mean(rows['score']):.4f}" if rows.height else "n/a",
                int(rows["passed"].sum()) if rows.height else 0,
                int((~rows["passed"]).sum()) if rows.height else 0,
            ]
        )
    return _table(["scorer", "weight", "threshold", "mean score", "passed", "failed"], summary)


def _failing_lines(
    config: OperationsConfig, scores: pl.DataFrame, blocks: dict[str, frozenset[str]]
) -> list[str]:
    """Per scorer with failing cases: how many, what to check, and its reasons section."""
    lines: list[str] = []
    for entry in config.entries:
        rows = scores.filter((pl.col("scorer") == entry["name"]) & ~pl.col("passed"))
        if not rows.height:
            continue
        failing = [(r["case_id"], json.loads(r["details"])) for r in rows.iter_rows(named=True)]
        advice = _ADVICE.get(entry["type"] or "", "see each case's details")
        lines += [
            f"### {entry['name']} below {entry['threshold']}: {rows.height:,} cases",
            "",
            f"{advice[0].upper()}{advice[1:]}",
            "",
            *_section(entry["type"], entry["name"], failing, blocks),
            "",
        ]
    return lines or ["Every case met every threshold.", ""]


def _input_error_lines(errors: pl.DataFrame) -> list[str]:
    """The first input errors as a table, and how to find the rest when there are more."""
    lines = _table(
        ["case", "error"],
        [[r["case_id"], r["error"]] for r in errors.head(EXAMPLES * 2).iter_rows(named=True)],
    )
    if errors.height > EXAMPLES * 2:
        lines.append(
            f"... and {errors.height - EXAMPLES * 2:,} more (SELECT them from "
            "latest_operation_cases WHERE error IS NOT NULL)"
        )
    return lines


def _quarantine_lines(quarantine: pl.DataFrame | None) -> list[str]:
    """Quarantined lines and files by rule, with an example reason each."""
    if quarantine is None or quarantine.is_empty():
        return []
    by_rule = (
        quarantine.group_by("rule")
        .agg(rows=pl.len(), example=pl.col("reason").first())
        .sort(["rows", "rule"], descending=[True, False])
    )
    rows = [[r, f"{n:,}", e] for r, n, e in by_rule.iter_rows()]
    return ["## Quarantine by rule", "", *_table(["rule", "rows", "example"], rows), ""]


def build_operations_report(
    run_id: str,
    config: OperationsConfig,
    counts: dict[str, int],
    timings: dict[str, float],
    cases: pl.DataFrame,
    scores: pl.DataFrame,
    quarantine: pl.DataFrame | None = None,
    blocks: dict[str, frozenset[str]] | None = None,
) -> OperationsReport:
    """The report of a run over the latest results of its input's cases.

    `cases` and `scores` are latest_operation_cases and latest_operation_scores rows;
    `quarantine` the run's rejected lines and files (rule, reason); `blocks` the block ids of
    each case's original document, so a target that names none of them is marked unknown.
    """
    total = cases.height
    passed = int(cases["passed"].sum()) if total else 0
    errors = cases.filter(pl.col("error").is_not_null())
    lines = [
        f"# Operation scores: run {run_id}, scorer set '{config.name}'",
        "",
        *_count_lines(counts, cases, passed, errors.height),
        "",
        "## Scorers",
        "",
        *_scorer_lines(config, scores),
        "",
        "## Failing cases by reason",
        "",
        *_failing_lines(config, scores, blocks or {}),
        "## Input errors",
        "",
        *_input_error_lines(errors),
        "",
        *_quarantine_lines(quarantine),
        "## Timings (seconds)",
        "",
        *_table(["stage", "seconds"], [[k, f"{v:.2f}"] for k, v in timings.items()]),
    ]
    return OperationsReport(
        run_id,
        config.name,
        counts,
        total,
        passed,
        total - passed,
        errors.height,
        "\n".join(lines) + "\n",
    )
