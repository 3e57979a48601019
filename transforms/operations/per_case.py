"""A straightforward per-case implementation of the five scorers: the test oracle and the
benchmark's baseline.

It reads each case as a plain mapping (a parsed JSONL line), applies the operations one by one
to a list of blocks, and searches patterns with Python's `re`, so it shares no code with the
vectorized scorers. Regex dialects differ only in what they reject and how they word it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import zip_longest
from typing import Any

from transforms.operations._reference_errors import input_errors
from transforms.operations.model import DEFAULT_POSITION, OPERATION_TYPES, POSITIONS

__all__ = ["reference_case", "reference_score_cases"]

ALL_PAGES = "(all pages)"
EXCERPT = 100
OPERATION_KEYS = ("type", "target_block_id", "target_index", "position", "content")
Op = dict[str, Any]


def _ops(items: Sequence[Mapping[str, Any]] | None, blocks: list[Mapping[str, Any]]) -> list[Op]:
    first_pos: dict[str, int] = {}
    for pos, block in enumerate(blocks):
        if block.get("id") is not None:
            first_pos.setdefault(block["id"], pos)
    out = []
    for index, item in enumerate(items or ()):
        op = {key: item.get(key) for key in OPERATION_KEYS}
        target_id = op["target_block_id"]
        at = op["target_index"]
        if target_id is None and at is not None and 0 <= at < len(blocks):
            target_id = blocks[at].get("id")
        op["index"] = index
        op["target_id"] = target_id
        op["target_pos"] = first_pos.get(target_id) if target_id is not None else None
        op["index_eff"] = op["target_index"] if op["target_index"] is not None else op["target_pos"]
        position = op["position"] or DEFAULT_POSITION
        op["pos_key"] = (
            "" if op["type"] != "insert" else position if position in POSITIONS else None
        )
        out.append(op)
    return out


def _op_json(op: Op) -> dict[str, Any]:
    return {
        "index": op["index"],
        "type": op["type"],
        "targetBlockId": op["target_block_id"],
        "targetIndex": op["target_index"],
        "position": op["position"],
        "content": op["content"],
    }


def _ratio(hit: int, total: int, fallback_total: int) -> float:
    if total > 0:
        return hit / total
    return 1.0 if fallback_total == 0 else 0.0


def _accuracy(expected: list[Op], actual: list[Op]) -> tuple[float, dict[str, Any]]:
    used = [False] * len(actual)
    unmatched = []
    for e in expected:
        key = (e["type"], e["target_pos"], e["pos_key"])
        hit = None
        if (
            e["type"] in OPERATION_TYPES
            and e["target_pos"] is not None
            and e["pos_key"] is not None
        ):
            for j, a in enumerate(actual):
                if not used[j] and (a["type"], a["target_pos"], a["pos_key"]) == key:
                    hit = j
                    break
        if hit is None:
            unmatched.append(e)
        else:
            used[hit] = True
    leftover = [a for j, a in enumerate(actual) if not used[j]]
    reasons = []
    for e in unmatched:
        target = e["target_pos"]
        same = [a for a in leftover if target is not None and a["target_pos"] == target]
        if e["type"] == "insert" and any(a["type"] == "insert" for a in same):
            reason = "position mismatch"
        elif any(not (e["type"] in OPERATION_TYPES and a["type"] == e["type"]) for a in same):
            reason = "type mismatch"
        else:
            reason = "target mismatch"
        reasons.append({"expected": _op_json(e), "reason": reason})
    matched = len(expected) - len(unmatched)
    return _ratio(matched, len(expected), len(actual)), {
        "matchedOperations": matched,
        "totalExpectedOperations": len(expected),
        "unmatchedOperations": reasons,
        "extraOperations": [_op_json(a) for a in leftover],
    }


def _pair(left: list[Op], right: list[Op], key: str) -> tuple[list[Op], list[Op]]:
    used = [False] * len(right)
    rest = []
    for e in left:
        hit = None
        if e[key] is not None:
            for j, a in enumerate(right):
                if not used[j] and a[key] == e[key]:
                    hit = j
                    break
        if hit is None:
            rest.append(e)
        else:
            used[hit] = True
    return rest, [a for j, a in enumerate(right) if not used[j]]


def _target_json(op: Op | None) -> dict[str, Any] | None:
    if op is None:
        return None
    return {
        "index": op["index"],
        "targetBlockId": op["target_block_id"],
        "targetIndex": op["target_index"],
    }


def _precision(expected: list[Op], actual: list[Op]) -> tuple[float, dict[str, Any]]:
    e_rest, a_rest = _pair(expected, actual, "target_pos")
    e_rest, a_rest = _pair(e_rest, a_rest, "index_eff")
    wrong = [
        {"expected": _target_json(e), "actual": _target_json(a)}
        for e, a in zip_longest(e_rest, a_rest)
    ]
    total = max(len(expected), len(actual))
    correct = total - len(wrong)
    return (correct / total if total else 1.0), {
        "correctTargets": correct,
        "totalTargets": total,
        "incorrectTargets": wrong,
    }


def _apply(
    blocks: list[Mapping[str, Any]], actual: list[Op]
) -> tuple[list[dict[str, Any]], list[str | None]]:
    doc = [
        {"pos": pos, "page": b.get("page"), "content": b.get("content") or ""}
        for pos, b in enumerate(blocks)
    ]
    failures: list[str | None] = []
    for op in actual:
        live = next(
            (i for i, b in enumerate(doc) if b["pos"] is not None and b["pos"] == op["target_pos"]),
            None,
        )
        if op["type"] not in OPERATION_TYPES:
            failures.append("invalid type")
        elif op["target_pos"] is None:
            failures.append("unknown block")
        elif op["type"] == "insert" and op["position"] not in (None, *POSITIONS):
            failures.append("invalid position")
        elif live is None:
            failures.append("block already deleted")
        else:
            failures.append(None)
            if op["type"] in ("update", "replace"):
                doc[live]["content"] = op["content"] or ""
            elif op["type"] == "delete":
                del doc[live]
            else:
                new = {"pos": None, "page": doc[live]["page"], "content": op["content"] or ""}
                doc.insert(live if op["position"] == "before" else live + 1, new)
    return doc, failures


def _content(
    patterns: list[Mapping[str, Any]], doc: list[dict[str, Any]]
) -> tuple[float, dict[str, Any], dict[int, str]]:
    issues, invalid, matched = [], {}, 0
    for k, p in enumerate(patterns):
        page = p.get("page")
        label = ALL_PAGES if page is None else page
        text = "\n".join(b["content"] for b in doc if page is None or b["page"] == page)
        if p.get("pattern") is None:
            issues.append(f"Page '{label}': Pattern missing")
            continue
        regex = ("(?i)" if p.get("case_insensitive") else "") + p["pattern"]
        try:
            compiled = re.compile(regex)
        except re.error as exc:
            issues.append(f"Page '{label}': Invalid pattern '{p['pattern']}': {exc}")
            invalid[k] = str(exc)
            continue
        if compiled.search(text):
            matched += 1
        else:
            issues.append(
                f"Page '{label}': Pattern '{p['pattern']}' not found in content: '{text[:EXCERPT]}...'"
            )
    score = matched / len(patterns) if patterns else 1.0
    return (
        score,
        {"matchedPatterns": matched, "totalPatterns": len(patterns), "contentIssues": issues},
        invalid,
    )


def _hallucination(
    blocks: list[Mapping[str, Any]],
    expected: list[Op],
    actual: list[Op],
    failures: list[str | None],
    doc: list[dict[str, Any]],
) -> tuple[float, dict[str, Any]]:
    allowed = Counter(
        e["target_pos"] for e in expected if e["type"] == "insert" and e["target_pos"] is not None
    )
    seen: Counter[int] = Counter()
    new_blocks = []
    for op, failure in zip(actual, failures, strict=True):
        reason = None
        if op["target_pos"] is None:
            reason = "unknown block"
        elif failure is None and op["type"] == "insert":
            seen[op["target_pos"]] += 1
            if seen[op["target_pos"]] > allowed[op["target_pos"]]:
                reason = "unexpected insert"
        if reason is not None:
            new_blocks.append({**_op_json(op), "reason": reason})
    deletes = {e["target_pos"] for e in expected if e["type"] == "delete"}
    changes_ok = {e["target_pos"] for e in expected if e["type"] in ("update", "replace", "delete")}
    final = {b["pos"]: b["content"] for b in doc if b["pos"] is not None}
    deletions, changes = [], []
    for pos, b in enumerate(blocks):
        original = b.get("content") or ""
        if pos not in final:
            if pos not in deletes:
                deletions.append(
                    {"blockId": b.get("id"), "page": b.get("page"), "content": original}
                )
        elif final[pos] != original and pos not in changes_ok:
            changes.append(
                {
                    "blockId": b.get("id"),
                    "page": b.get("page"),
                    "original": original,
                    "result": final[pos],
                }
            )
    ok = not new_blocks and not deletions and not changes
    return (1.0 if ok else 0.0), {
        "noNewContent": not new_blocks,
        "noDeletedBlocks": not deletions,
        "onlySpecifiedChanges": not changes,
        "newBlocks": new_blocks,
        "unexpectedDeletions": deletions,
        "unspecifiedChanges": changes,
    }


def reference_case(
    row: Mapping[str, Any],
) -> tuple[dict[str, tuple[float, dict[str, Any]]], list[str]]:
    """The five built-in scores and details of one case, and its input errors."""
    blocks = list(row.get("original_blocks") or ())
    expected = _ops(row.get("expected_operations"), blocks)
    actual = _ops(row.get("actual_operations"), blocks)
    patterns = list(row.get("expected_patterns") or ())
    doc, failures = _apply(blocks, actual)
    content, content_details, invalid = _content(patterns, doc)
    applied = sum(failure is None for failure in failures)
    rate = _ratio(applied, len(actual), len(expected))
    failed = [
        {**{k: v for k, v in _op_json(op).items() if k != "content"}, "reason": failure}
        for op, failure in zip(actual, failures, strict=True)
        if failure is not None
    ]
    scores = {
        "operation-accuracy": _accuracy(expected, actual),
        "target-block-precision": _precision(expected, actual),
        "content-quality": (content, content_details),
        "operation-result": (
            rate * 0.6 + content * 0.4,
            {
                "applicationSuccessRate": rate,
                "appliedOperations": applied,
                "totalOperations": len(actual),
                "contentScore": content,
                "failedOperations": failed,
            },
        ),
        "anti-hallucination": _hallucination(blocks, expected, actual, failures, doc),
    }
    return scores, input_errors(blocks, expected, patterns, invalid)


def reference_score_cases(
    rows: Iterable[Mapping[str, Any]], scorers: Sequence[tuple[str, float, float]]
) -> list[dict[str, Any]]:
    """Score each case with the named built-in scorers, given as (name, weight, threshold).

    Returns one dict per case: case_id, weighted_average, passed, failed_scorers, error and
    scores, a list of (scorer, score, threshold, passed, weight, details as JSON).
    """
    total_weight = sum(weight for _, weight, _ in scorers)
    results = []
    for row in rows:
        computed, errors = reference_case(row)
        scores = []
        weighted = 0.0
        failed = []
        for name, weight, threshold in scorers:
            score, details = computed[name]
            passed = score >= threshold - 1e-9
            if not passed:
                failed.append(name)
            weighted += score * weight
            scores.append(
                (name, score, threshold, passed, weight, json.dumps(details, ensure_ascii=False))
            )
        results.append(
            {
                "case_id": row["case_id"],
                "weighted_average": weighted / total_weight,
                "passed": not failed and not errors,
                "failed_scorers": failed,
                "error": "; ".join(errors) or None,
                "scores": scores,
            }
        )
    return results
