"""Sentence templates of the trace generator, compiled once and rendered column-wise.

Every text of a trace (objective, step content, tool input and output, result) is a template
of the trace's family (its domain, or off-topic, or word salad) and kind, with up to
MAX_SLOTS slots filled from the family's vocabularies (transforms.synth._vocab). Templates
and words are compiled into flat arrays, so rendering a million texts is a few gathers and
one string format.
"""

from __future__ import annotations

import re
from functools import cache
from typing import NamedTuple

import numpy as np
import polars as pl

from transforms.synth._hashing import mix, salt
from transforms.synth._vocab import FAMILIES as _FAMILIES
from transforms.synth._vocab import NUMBERS as _NUMBERS
from transforms.synth._vocab import PER_TRACE as _PER_TRACE
from transforms.synth._vocab import SALAD_WORDS as _SALAD_WORDS
from transforms.synth._vocab import SHARED as _SHARED

__all__ = [
    "FAMILY_OF",
    "KIND",
    "NOISE",
    "OFF_TOPIC",
    "STEP_TYPES",
    "pick",
    "render",
    "tables",
]

STEP_TYPES: tuple[str, ...] = ("thought", "tool_call", "observation", "error_recovery")
"""The SDK's step types, in the order of the internal type codes."""

_KINDS = ("objective", *STEP_TYPES, "output", "output_err", "result_ok", "result_fail", "raw")
KIND = {name: i for i, name in enumerate(_KINDS)}
"""The code of each kind of text; a step's kind is its type code + 1."""
FAMILY_OF = {
    "code": 1,
    "code-review": 1,
    "customer_service": 2,
    "travel": 3,
    "finance": 4,
    "medical": 5,
}
"""The family of each task domain with its own vocabulary; any other domain has family 0."""
OFF_TOPIC, NOISE = 6, 7
"""The families of off-topic requests and of word salad."""

MAX_SLOTS = 3
"""The most slots a template may have."""


class _Tables(NamedTuple):
    """Every template compiled into flat arrays, so rendering is one gather per piece."""

    literals: pl.Series
    """Literal k of template t at t * (MAX_SLOTS + 1) + k; the last template is all null."""
    words: pl.Series
    """Every slot vocabulary, concatenated after one empty string that absent slots use."""
    offset: np.ndarray
    size: np.ndarray
    salt: np.ndarray
    per_trace: np.ndarray
    varies: np.ndarray
    pick_offset: np.ndarray
    pick_count: np.ndarray
    tool_names: pl.Series
    tool_template: np.ndarray
    tool_offset: np.ndarray
    tool_count: np.ndarray


@cache
def tables() -> _Tables:
    """The compiled templates (built on first use, then cached)."""
    texts: list[tuple[int, str]] = []
    picks = np.zeros((2, len(_FAMILIES), len(_KINDS)), dtype=np.int64)
    for f, fam in enumerate(_FAMILIES):
        for k, kind in enumerate(_KINDS):
            entries = fam.get(kind, _SHARED.get(kind, "")).split("|")
            picks[:, f, k] = len(texts), len(entries)
            texts += [(f, text) for text in entries]
    tools = [(fam.get("tools") or _FAMILIES[0]["tools"]).split("|") for fam in _FAMILIES]
    names = [spec.split("=", 1)[0] for specs in tools for spec in specs]
    tool_template = np.arange(len(names)) + len(texts)
    texts += [(f, spec.split("=", 1)[1]) for f, specs in enumerate(tools) for spec in specs]
    words, where = [""], {}
    shape = (len(texts) + 1, MAX_SLOTS)
    offset, size = np.zeros(shape, np.int64), np.ones(shape, np.uint64)
    salts, per_trace, varies = (
        np.zeros(shape, np.uint64),
        np.zeros(shape, bool),
        np.zeros(shape, bool),
    )
    literals: list[str | None] = []
    for t, (f, text) in enumerate(texts):
        pieces = re.split(r"\{(\w+)\}", text)
        if len(pieces) > 2 * MAX_SLOTS + 1:
            raise ValueError(f"template has more than {MAX_SLOTS} slots: {text!r}")
        literals += pieces[0::2] + [""] * (MAX_SLOTS + 1 - len(pieces[0::2]))
        for j, slot in enumerate(pieces[1::2]):
            owner = -1 if slot in _NUMBERS or slot == "w" else (f if slot in _FAMILIES[f] else 0)
            if (owner, slot) not in where:
                where[owner, slot] = (len(words), _vocabulary(owner, slot))
                words += where[owner, slot][1]
            offset[t, j], size[t, j] = where[owner, slot][0], len(where[owner, slot][1])
            per_trace[t, j] = slot in _PER_TRACE
            salts[t, j] = salt(slot if per_trace[t, j] else f"{slot}@{j}")
            varies[t, j] = slot in _NUMBERS or slot == "finding"
    literals += [None] * (MAX_SLOTS + 1)
    counts = np.array([len(specs) for specs in tools])
    return _Tables(
        pl.Series(literals, dtype=pl.String),
        pl.Series(words, dtype=pl.String),
        offset,
        size,
        salts,
        per_trace,
        varies,
        picks[0],
        picks[1],
        pl.Series(names, dtype=pl.String),
        tool_template,
        np.concatenate([[0], np.cumsum(counts)[:-1]]),
        counts.astype(np.uint64),
    )


def _vocabulary(owner: int, slot: str) -> list[str]:
    """The words of `slot`: a number range, the salad words, or family `owner`'s list."""
    if slot in _NUMBERS:
        low, high = _NUMBERS[slot]
        return [str(value) for value in range(low, high + 1)]
    if slot == "w":
        return _SALAD_WORDS.split()
    return _FAMILIES[owner][slot].split("|")


def pick(family: np.ndarray, kind: np.ndarray | int, h: np.ndarray) -> np.ndarray:
    """Template ids: one template of the row's family and kind, chosen by the hash."""
    compiled = tables()
    count = compiled.pick_count[family, kind].astype(np.uint64)
    return compiled.pick_offset[family, kind] + (h % count).astype(np.int64)


def render(
    tid: np.ndarray, row_hash: np.ndarray, key: np.ndarray, variant: np.ndarray
) -> pl.Series:
    """Fill template `tid[i]` for each row; null where `tid[i]` is -1.

    Per-trace slots hash the trace key, so the objective and the steps name the
    same entity; other slots hash the row and the slot position. Numbers and
    findings also hash the variant, which is what makes near-duplicates.
    """
    compiled = tables()
    t = np.where(tid < 0, len(compiled.offset) - 1, tid)
    first = t * (MAX_SLOTS + 1)
    columns = {"l0": compiled.literals.gather(first)}
    for j in range(MAX_SLOTS):
        if not np.any(compiled.offset[t, j]):
            break
        size = compiled.size[t, j]
        h = mix(np.where(compiled.per_trace[t, j], key, row_hash) ^ compiled.salt[t, j])
        h = np.where(compiled.varies[t, j], mix(h ^ variant), h)
        columns[f"v{j}"] = compiled.words.gather(
            compiled.offset[t, j] + (h % size).astype(np.int64)
        )
        columns[f"l{j + 1}"] = compiled.literals.gather(first + j + 1)
    return (
        pl.DataFrame(columns).select(pl.format("{}" * len(columns), *columns).alias("")).to_series()
    )
