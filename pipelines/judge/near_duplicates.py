"""Near-duplicate answers judged once (`[near_duplicates] distance`, docs/judge.md): among a
run's answers to the same objective, word for word, an answer whose embedding lies within the
configured cosine distance of an earlier one (by item id) shares that answer's judgements
instead of being called; its rows say from which answer they came (`shared_from`).

The answers are embedded with the scoring's sentence model (`pipelines.embedder`), only where
two or more answers share an objective: a run of distinct tasks embeds nothing."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from transforms.judge.plan import PlannedItem

__all__ = ["share_near_duplicates"]

Encode = Callable[[Sequence[str]], npt.NDArray[np.float32]]


def _unit(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    values = vectors.astype(np.float64)
    norms = np.linalg.norm(values, axis=1, keepdims=True)
    return np.divide(values, norms, out=np.zeros_like(values), where=norms > 0)


def _clusters(vectors: npt.NDArray[np.float64], distance: float) -> list[int]:
    """For each answer in order, the index of the earlier answer it shares with (itself when
    none lies within `distance`): an answer joins the first earlier representative close
    enough, so sharing never chains (each follower is within `distance` of its own)."""
    leaders: list[int] = []
    chosen = []
    for index, vector in enumerate(vectors):
        near = [at for at in leaders if 1.0 - float(vectors[at] @ vector) <= distance]
        if near:
            chosen.append(near[0])
        else:
            leaders.append(index)
            chosen.append(index)
    return chosen


def share_near_duplicates(planned: list[PlannedItem], distance: float, encode: Encode) -> int:
    """Mark the answers that share a near-duplicate's judgements; return how many. Only an
    answer that still needs a call follows; any non-blank answer may lead (one judged
    already, in an earlier run, included)."""
    groups: dict[str, list[PlannedItem]] = {}
    for item in sorted(planned, key=lambda planned_item: planned_item.item_id):
        if not item.blank:
            groups.setdefault(item.user_query, []).append(item)
    followers = 0
    for items in groups.values():
        if len(items) < 2 or not any(j.needs_call for i in items for j in i.judgements):
            continue
        vectors = _unit(encode([item.submission for item in items]))
        for item, leader_at in zip(items, _clusters(vectors, distance), strict=True):
            leader = items[leader_at]
            if leader is item or not any(j.needs_call for j in item.judgements):
                continue
            item.shared_from = leader.item_id
            for own, theirs in zip(item.judgements, leader.judgements, strict=True):
                if own.needs_call:
                    own.share_key = theirs.cache_key
            followers += 1
    return followers
