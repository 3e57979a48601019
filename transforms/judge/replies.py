"""Reading a judgement written as text (the `prompted` and `native` output modes): small local
models wrap their JSON in prose or a Markdown code fence, so the object is looked for anywhere
in the reply."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["json_object_in"]

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL)
_DECODER = json.JSONDecoder()
_SCORE = re.compile(r'"score"\s*:\s*(-?\d+(?:\.\d+)?)')
_COMMENT = re.compile(r'"comment"\s*:\s*("(?:[^"\\]|\\.)*")')


def _objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object that starts at a `{` of `text` and decodes, in order."""
    found: list[dict[str, Any]] = []
    start = text.find("{")
    while start != -1:
        try:
            value, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        start = text.find("{", end)
    return found


def json_object_in(text: str, wanted: str = "score") -> dict[str, Any] | None:
    """The JSON object of a text reply, or None when there is none.

    Tried in order: the whole text, each fenced code block, then every object found in the
    text; among several, the first that has the key `wanted`. A model's `<think>` block is
    skipped.
    """
    text = _THINKING.sub("", text).strip()
    candidates: list[dict[str, Any]] = []
    for part in (text, *_FENCE.findall(text)):
        try:
            value = json.loads(part)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            candidates.append(value)
    candidates.extend(_objects(text))
    with_key = [value for value in candidates if wanted in value]
    if with_key:
        return with_key[0]
    return candidates[0] if candidates else _cut_judgement(text)


def _cut_judgement(text: str) -> dict[str, Any] | None:
    """The score and comment of an object cut short after both were written whole (a small
    model that goes on adding keys until max_tokens stops it)."""
    opened = text.find("{")
    score = _SCORE.search(text, opened) if opened != -1 else None
    comment = _COMMENT.search(text, opened) if opened != -1 else None
    if score is None or comment is None:
        return None
    return {"score": float(score.group(1)), "comment": json.loads(comment.group(1))}
