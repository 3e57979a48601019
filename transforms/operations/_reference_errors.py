"""The input errors of one case, found the straightforward way: the reference's own checks.

Part of the per-case reference (transforms.operations.per_case): it reads the case as plain
mappings, shares no code with transforms.operations.prepare, and words each error as the
vectorized checks do, in the same order (blocks, expected operations, expected patterns).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from transforms.operations.model import OPERATION_TYPES, POSITIONS

__all__ = ["input_errors"]

_TYPES = ", ".join(OPERATION_TYPES)


def _block_errors(blocks: Sequence[Mapping[str, Any]]) -> list[str]:
    """Blocks without an id, and each repeated id once, at its first block."""
    errors = []
    counts = Counter(b.get("id") for b in blocks if b.get("id") is not None)
    reported = set()
    for pos, b in enumerate(blocks):
        if b.get("id") is None:
            errors.append(f"original block {pos} has no id")
        elif counts[b["id"]] > 1 and b["id"] not in reported:
            reported.add(b["id"])
            errors.append(
                f"block id '{b['id']}' appears {counts[b['id']]} times in original_blocks; block ids must be unique within a case"
            )
    return errors


def _operation_errors(e: Mapping[str, Any], n_blocks: int) -> list[str]:
    """What is wrong with one expected operation: its type, position or target."""
    errors = []
    name = f"expected operation {e['index']}"
    if e["type"] is None:
        errors.append(f"{name} has no type; use one of {_TYPES}")
    elif e["type"] not in OPERATION_TYPES:
        errors.append(f"{name} has type '{e['type']}'; use one of {_TYPES}")
    if e["type"] == "insert" and e["position"] is not None and e["position"] not in POSITIONS:
        errors.append(
            f"{name} has position '{e['position']}'; use before or after (or leave it out for after)"
        )
    has_id, has_index = e["target_block_id"] is not None, e["target_index"] is not None
    if not has_id and not has_index:
        errors.append(f"{name} has neither target_block_id nor target_index")
    if not has_id and has_index and not 0 <= e["target_index"] < n_blocks:
        errors.append(
            f"{name} has target_index {e['target_index']}, outside the {n_blocks} original blocks"
        )
    if has_id and e["target_pos"] is None:
        errors.append(
            f"{name} targets block '{e['target_block_id']}', which is not among the original blocks"
        )
    if (
        has_id
        and has_index
        and e["target_pos"] is not None
        and e["target_index"] != e["target_pos"]
    ):
        errors.append(
            f"{name} targets block '{e['target_block_id']}' at index {e['target_pos']} but gives target_index {e['target_index']}"
        )
    return errors


def _pattern_errors(
    blocks: Sequence[Mapping[str, Any]],
    patterns: Sequence[Mapping[str, Any]],
    invalid: Mapping[int, str],
) -> list[str]:
    """Patterns without a pattern, on a page no block is on, or with an invalid regex."""
    errors = []
    pages = {b.get("page") for b in blocks}
    for k, p in enumerate(patterns):
        if p.get("pattern") is None:
            errors.append(f"expected pattern {k} has no pattern")
        if p.get("page") is not None and p["page"] not in pages:
            errors.append(
                f"expected pattern {k} names page '{p['page']}', which no original block is on"
            )
        if k in invalid:
            errors.append(
                f"expected pattern {k} ('{p['pattern']}') is not a valid regular expression: {invalid[k]}"
            )
    return errors


def input_errors(
    blocks: Sequence[Mapping[str, Any]],
    expected: Sequence[Mapping[str, Any]],
    patterns: Sequence[Mapping[str, Any]],
    invalid: Mapping[int, str],
) -> list[str]:
    """Every input error of a case, in the order the vectorized checks report them.

    Args:
        blocks: The original blocks.
        expected: The expected operations as the reference parses them (with index and
            target_pos).
        patterns: The expected patterns.
        invalid: Why each invalid pattern's regex does not compile, by pattern position.
    """
    errors = _block_errors(blocks)
    for e in expected:
        errors += _operation_errors(e, len(blocks))
    return errors + _pattern_errors(blocks, patterns, invalid)
