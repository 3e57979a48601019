"""Generated eval cases for tests and benchmarks: seeded, with every kind of model mistake.

The model's operations start as a copy of the expected ones and are then disturbed: a changed
type, target or insert position, a dropped or duplicated operation, an operation on a block
that does not exist, an unasked delete or update, a target given by index only. A few cases
carry the eval author's mistakes (an invalid regex, a duplicated block id, an unknown target).
"""

from __future__ import annotations

import random
from typing import Any

from transforms.operations.model import OPERATION_TYPES

__all__ = ["synthetic_case_rows"]

_WORDS = [
    "cart",
    "checkout",
    "invoice",
    "summary",
    "refund",
    "order",
    "shipping",
    "payment",
    "account",
    "profile",
    "login",
    "search",
    "filter",
    "report",
    "export",
    "import",
    "budget",
    "forecast",
    "review",
    "draft",
    "release",
    "deploy",
    "rollback",
    "metric",
    "latency",
    "error",
    "retry",
    "queue",
    "worker",
    "cache",
    "index",
    "schema",
    "migration",
    "backup",
    "restore",
    "audit",
    "policy",
    "要約",
    "まとめ",
    "サマリー",
    "置換後",
    "追加",
    "削除",
    "見出し",
    "手順",
    "注意",
    "結論",
]
_INDEX = {word: index for index, word in enumerate(_WORDS)}
_PAGES = ("Intro", "Guide", "FAQ", "Notes")


def _sentence(rng: random.Random) -> str:
    words = rng.choices(_WORDS, k=rng.randint(3, 9))
    if rng.random() < 0.3:
        words[0] = words[0].capitalize()
    return " ".join(words)


def _pattern(rng: random.Random, text: str) -> str:
    """A pattern from a fixed library (four shapes per word), mostly about a word of `text`.

    Eval suites reuse their patterns, so a batch holds a few hundred distinct regexes.
    """
    words = [word for word in text.split() if word.lower() in _INDEX] or ["cart"]
    word = rng.choice(words).lower() if rng.random() < 0.8 else rng.choice(_WORDS)
    partner = _WORDS[(_INDEX[word] + 1) % len(_WORDS)]
    shape = rng.random()
    if shape < 0.35:
        return word
    if shape < 0.6:
        return f"{word}|{partner}"
    if shape < 0.8:
        return f".*{word}.*"
    return f"{word}.*{word}"


def _operation(rng: random.Random, n_blocks: int) -> dict[str, Any]:
    kind = rng.choice(OPERATION_TYPES)
    target = rng.randrange(n_blocks)
    return {
        "type": kind,
        "target_block_id": f"b{target}",
        "target_index": target if rng.random() < 0.5 else None,
        "position": rng.choice(("before", "after", None)) if kind == "insert" else None,
        "content": None if kind == "delete" else _sentence(rng),
    }


def _disturb(rng: random.Random, ops: list[dict[str, Any]], n_blocks: int) -> list[dict[str, Any]]:
    actual = [dict(op) for op in ops]
    for op in actual:
        roll = rng.random()
        if roll < 0.06:
            op["type"] = rng.choice(OPERATION_TYPES)
        elif roll < 0.12:
            target = rng.randrange(n_blocks)
            op["target_block_id"], op["target_index"] = f"b{target}", None
        elif roll < 0.16 and op["type"] == "insert":
            op["position"] = "before" if op["position"] == "after" else "after"
        elif roll < 0.20:
            op["target_block_id"] = None
            op["target_index"] = int(op["target_index"] or 0)
        elif roll < 0.23:
            op["content"] = _sentence(rng)
    roll = rng.random()
    if roll < 0.05 and actual:
        actual.pop(rng.randrange(len(actual)))
    elif roll < 0.09 and actual:
        actual.append(dict(rng.choice(actual)))
    elif roll < 0.12:
        actual.append({"type": "update", "target_block_id": "b99", "content": _sentence(rng)})
    elif roll < 0.15:
        actual.append({"type": "delete", "target_block_id": f"b{rng.randrange(n_blocks)}"})
    elif roll < 0.18:
        actual.append(_operation(rng, n_blocks))
    elif roll < 0.19:
        actual.append({"type": "modify", "target_block_id": "b0", "content": "x"})
    elif roll < 0.20:
        actual = []
    if rng.random() < 0.15:
        rng.shuffle(actual)
    return actual


def _case(rng: random.Random, number: int) -> dict[str, Any]:
    n_blocks = rng.randint(2, 8)
    pages = _PAGES[: rng.randint(1, 3)]
    blocks = [
        {"id": f"b{i}", "page": pages[i * len(pages) // n_blocks], "content": _sentence(rng)}
        for i in range(n_blocks)
    ]
    expected = [_operation(rng, n_blocks) for _ in range(rng.choice((0, 1, 1, 2, 2, 3, 4)))]
    actual = _disturb(rng, expected, n_blocks)
    patterns = []
    for _ in range(rng.choice((0, 1, 2, 2, 3))):
        source = rng.choice([op["content"] for op in expected if op["content"]] or [_sentence(rng)])
        page = rng.choice((*pages, None))
        patterns.append(
            {
                "pattern": _pattern(rng, source),
                "page": page,
                "case_insensitive": rng.random() < 0.3,
            }
        )
    author_mistake = rng.random()
    if author_mistake < 0.005 and patterns:
        patterns[0]["pattern"] = "(unclosed"
    elif author_mistake < 0.008:
        blocks[-1]["id"] = blocks[0]["id"]
    elif author_mistake < 0.011 and expected:
        expected[0]["target_block_id"], expected[0]["target_index"] = "b404", None
    return {
        "case_id": f"case-{number:07d}",
        "original_blocks": blocks,
        "expected_operations": expected,
        "actual_operations": actual,
        "expected_patterns": patterns,
        "duration_ms": round(rng.lognormvariate(7.5, 0.6), 1),
    }


def synthetic_case_rows(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """`n` generated cases as plain dicts (the shape of parsed JSONL lines)."""
    rng = random.Random(seed)
    return [_case(rng, number) for number in range(n)]
